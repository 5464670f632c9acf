#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rswap-test-report.service of the systemd-booted test guests (installed as
# /usr/local/sbin/rswap-test-report): once the boot is over, write what
# tests/host/55-systemd-boot.sh checks to /mnt/out. The client guest then powers off
# through systemd (its shutdown is checked in serial.log); the server guest keeps
# refreshing its report until the host stops it.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
role=$1 out=/mnt/out
PROPS=Id,Type,ActiveState,SubState,Result,StatusText,NRestarts,TimeoutStartUSec
PROPS+=,InactiveExitTimestampMonotonic,ActiveEnterTimestampMonotonic
PROPS+=,ExecMainStartTimestampMonotonic,ExecMainExitTimestampMonotonic,ExecMainStatus
PROPS+=,WatchdogUSec,WatchdogTimestampMonotonic
# fresh FILE CMD...: CMD's output and errors into $out/FILE, written aside and renamed into
# place. The host stops the server guest at any moment and reads the files then, so it
# must never find one truncated and not yet written again (an empty journal failed the
# cycle check once).
fresh() { "${@:2}" > "$out/$1.new" 2>&1; mv -f "$out/$1.new" "$out/$1"; }
show() { mkdir -p "$out/show"; for u; do fresh "show/$u" systemctl show -p "$PROPS" "$u"; done; }

# Until the job queue is empty ("degraded": rswap@bad failed, on purpose).
state=$(timeout 600 systemctl is-system-running --wait)
echo "rswap-test-report: system $state"
echo "$state" > "$out/system-state"
show multi-user.target sysinit.target swap.target network.target network-online.target \
	rswap-test-net.service
systemctl --failed --no-legend --plain > "$out/failed-units" 2>&1
systemd-analyze time > "$out/analyze-time" 2>&1
systemd-analyze verify /usr/lib/systemd/system/rswap@.service \
	/usr/lib/systemd/system/rswap-server.service /usr/lib/systemd/system/rswap-metrics.service \
	/usr/lib/systemd/system/rswap-metrics.timer > "$out/verify" 2>&1
echo "exit $?" >> "$out/verify"

PROM=/var/lib/prometheus/node-exporter
# metrics FILE: the textfile collector's FILE as it is now into $out/FILE, its age in
# seconds into $out/FILE.age, the directory's files into $out/prom-ls, and
# rswap-metrics' units' properties.
metrics() {
	if [ -f "$PROM/$1" ]; then
		fresh "$1" cat "$PROM/$1"
		fresh "$1.age" echo $(( $(date +%s) - $(stat -c %Y "$PROM/$1") ))
	fi
	# Without a temporary file the service is writing at this moment (younger than 10 s):
	# only one left behind counts.
	fresh prom-ls find "$PROM" -mindepth 1 -maxdepth 1 \( -name '*.prom' -o ! -newermt '-10 seconds' \) \
		-printf '%f\n'
	show rswap-metrics.timer rswap-metrics.service
}

case $role in
client)
	# A client the server's allow-list does not know: refused, which the server logs as a
	# warning (checked in its journal with -p warning).
	srv=$(sed -n 's/^server = //p' /etc/rswap/targets/swap0.conf)
	rswapctl add unknown0 --server "$srv" --size 16M --queues 1 --client-id 0x5309 \
		> "$out/unknown-add" 2>&1
	# The timer's first run (15 s after boot), then another one (15 s later): the file
	# must be there, and rewritten; the second read follows the rewrite at once (its age
	# is checked).
	for _ in $(seq 120); do [ -s "$PROM/rswap.prom" ] && break; sleep 1; done
	metrics rswap.prom
	first=$(stat -c %Y "$PROM/rswap.prom" 2>/dev/null || echo 0)
	# What the boot left, which does not change once it is over, is written meanwhile, in
	# the background: about 20 s under TCG, which came after the rewrite's wait.
	{
		show rswap@swap0.service rswap@bad.service
		cat /proc/swaps > "$out/swaps"
		find /sys/kernel/config/rswap -mindepth 1 -maxdepth 1 -type d -printf '%f\n' > "$out/configfs" 2>&1
		rswapctl list > "$out/rswapctl-list" 2>&1
		systemctl status --no-pager -l rswap@swap0.service rswap@bad.service > "$out/status" 2>&1
		systemd-analyze critical-chain rswap@swap0.service > "$out/critical-chain" 2>&1
	} &
	collect=$!
	for _ in $(seq 60); do
		[ "$(stat -c %Y "$PROM/rswap.prom" 2>/dev/null || echo 0)" -gt "$first" ] && break
		sleep 1
	done
	metrics rswap.prom
	echo "$first $(stat -c %Y "$PROM/rswap.prom" 2>/dev/null || echo 0)" > "$out/rswap.prom.mtimes"
	wait $collect
	journalctl -b --no-pager -o short-monotonic > "$out/journal" 2>&1
	echo 0 > "$out/exit-code"
	sync
	echo "rswap-test-report: powering off"
	systemctl poweroff --no-block
	;;
server)
	echo 0 > "$out/exit-code"
	for _ in $(seq 360); do
		show rswap-server.service
		fresh server-status rswapctl server-status
		# The first view with the client's region live is kept.
		if ! [ -s "$out/server-status-live" ] && grep -qE '^0x5301 .* live ' "$out/server-status"; then
			fresh server-status-live cat "$out/server-status"
		fi
		metrics rswap-server.prom
		# The first metrics with the client's region (0x5301) are kept too.
		if ! [ -s "$out/rswap-server.prom-live" ] \
			&& grep -q '^rswap_server_client_region_bytes{client_id="21249"}' "$out/rswap-server.prom" 2>/dev/null; then
			fresh rswap-server.prom-live cat "$out/rswap-server.prom"
		fi
		fresh journal journalctl -b --no-pager -o short-monotonic
		# The server's lines at priority warning and above, and all of them.
		fresh journal-server-warning journalctl -b --no-pager -o cat -p warning -u rswap-server.service
		fresh journal-server journalctl -b --no-pager -o cat -u rswap-server.service
		sync
		sleep 5
	done
	;;
esac
