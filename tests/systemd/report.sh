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
	/usr/lib/systemd/system/rswap-server.service > "$out/verify" 2>&1
echo "exit $?" >> "$out/verify"

case $role in
client)
	show rswap@swap0.service rswap@bad.service
	cat /proc/swaps > "$out/swaps"
	find /sys/kernel/config/rswap -mindepth 1 -maxdepth 1 -type d -printf '%f\n' > "$out/configfs" 2>&1
	rswapctl list > "$out/rswapctl-list" 2>&1
	systemctl status --no-pager -l rswap@swap0.service rswap@bad.service > "$out/status" 2>&1
	systemd-analyze critical-chain rswap@swap0.service > "$out/critical-chain" 2>&1
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
		fresh journal journalctl -b --no-pager -o short-monotonic
		sync
		sleep 5
	done
	;;
esac
