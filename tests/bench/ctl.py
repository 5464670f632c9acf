#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Control channel between the benchmark's client and server guests (plain TCP).

  ctl.py serve PORT SCRIPT      (server guest) answer requests until "stop"
  ctl.py send HOST PORT CMD...  (client guest) send one request, print the reply,
                                exit with the remote command's exit code

Requests (one line each, one per connection):
  ping                 -> "RC 0"
  run FUNC ARG...      -> runs `bash SCRIPT FUNC ARG...` and returns its exit code and output
  spawn FUNC ARG...    -> starts `bash SCRIPT FUNC ARG...` in the background, returns at once
  stop                 -> the server loop ends (SCRIPT then tears down and the guest powers off)

The link is the guests' private QEMU network: there is no authentication.
"""
import shlex
import socket
import subprocess
import sys
import time


def serve(port, script):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("", port))
    srv.listen(8)
    children = []
    while True:
        conn, _ = srv.accept()
        with conn:
            conn.settimeout(30)
            try:
                line = conn.makefile("r").readline().strip()
            except OSError:
                continue
            words = shlex.split(line)
            if not words:
                continue
            print(f"ctl: {line}", flush=True)
            if words[0] == "ping":
                reply = "RC 0\n"
            elif words[0] == "stop":
                conn.sendall(b"RC 0\n")
                break
            elif words[0] == "run":
                try:
                    p = subprocess.run(["bash", script] + words[1:], stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, timeout=600, text=True)
                    reply = f"RC {p.returncode}\n{p.stdout}"
                except subprocess.TimeoutExpired as e:
                    reply = f"RC 124\ntimed out after 600 s\n{e.stdout or ''}"
            elif words[0] == "spawn":
                children.append(subprocess.Popen(["bash", script] + words[1:]))
                reply = "RC 0\n"
            else:
                reply = f"RC 2\nunknown request {words[0]}\n"
            try:
                conn.sendall(reply.encode())
            except OSError:
                pass
        children = [c for c in children if c.poll() is None]
    for c in children:
        c.terminate()


def send(host, port, words, wait=0.0):
    """Send one request; with wait > 0, retry connecting for that many seconds."""
    deadline = time.monotonic() + wait
    while True:
        try:
            s = socket.create_connection((host, port), timeout=10)
            break
        except OSError as e:
            if time.monotonic() >= deadline:
                print(f"ctl: cannot reach {host}:{port}: {e}")
                return 111
            time.sleep(1)
    with s:
        s.settimeout(660)
        s.sendall((shlex.join(words) + "\n").encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    text = data.decode(errors="replace")
    head, _, body = text.partition("\n")
    sys.stdout.write(body)
    try:
        return int(head.split()[1])
    except (IndexError, ValueError):
        print(f"ctl: bad reply {head!r}")
        return 1


def main():
    a = sys.argv[1:]
    if len(a) >= 3 and a[0] == "serve":
        serve(int(a[1]), a[2])
        return 0
    if len(a) >= 4 and a[0] == "send":
        wait = 0.0
        if a[3].startswith("--wait="):
            wait = float(a[3].split("=", 1)[1])
            a = a[:3] + a[4:]
        return send(a[1], int(a[2]), a[3:], wait)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
