#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Boot-time setup with the packaged units: two guests booted with systemd as PID 1
# (qemu/run-pair.sh --systemd). The server guest runs rswap-server.service (Type=notify)
# from /etc/rswap/server.conf; the client guest has rswap@swap0.service enabled
# (/etc/rswap/targets/swap0.conf: swap = yes) and rswap@bad.service, whose server port
# has no listener. The guests' reports (tests/systemd/report.sh) and the client's console
# (its shutdown) are checked here. Prints KTAP lines for scripts/check.sh.
#   tests/host/55-systemd-boot.sh [--out DIR]
. "$(dirname "$0")/../../scripts/common.sh"
. "$RSWAP_TOP/tests/lib/ktap.sh"
# Checks below look for lines that may be missing: a failing grep is a result, not an end.
set +e +o pipefail
out=$RSWAP_TOP/results/systemd-boot
[ "${1:-}" != --out ] || out=$2
rm -rf "$out"; mkdir -p "$out"
setup() {
	if [ "${KERNEL:-stock}" != stock ]; then
		ktap_skip_rest "the systemd guests boot the stock kernel only (KERNEL=${KERNEL})"
	fi
	bash "$RSWAP_TOP/scripts/build-server.sh" >/dev/null 2>"$out/build.log" \
		|| { cat "$out/build.log"; ktap_skip_rest "the tools do not build"; }
	[ -f "$RSWAP_TOP/rswap.ko" ] || make -s -C "$RSWAP_TOP" >"$out/build-module.log" 2>&1 \
		|| ktap_skip_rest "rswap.ko does not build"
	module_index "$out/client/depmod" >"$out/depmod.log" 2>&1 &
	local index_pid=$!
	rc=0
	start=$(date +%s)
	RSWAP_QUIET=1 bash "$RSWAP_TOP/qemu/run-pair.sh" --systemd --kernel stock --out "$out" \
		--timeout 1200 --grace 1 tests/systemd/server-prepare.sh tests/systemd/client-prepare.sh \
		>"$out/run-pair.log" 2>&1 || rc=$?
	wait "$index_pid" || true
	ktap_diag "guests ran $(( $(date +%s) - start )) s; client guest exit $rc (results in $out)"
	C=$out/client S=$out/server
}

# module_index DIR: the client guest's module index (depmod's modules.* files) with
# rswap.ko in updates/, made here while the guests boot, then DIR/done (or DIR/failed).
# depmod reads every module of the kernel: seconds here, over a minute of the client's
# boot under TCG. tests/systemd/client-prepare.sh waits for it, and runs depmod itself
# if it failed.
module_index() {
	local img kver root=$out/depmod-root
	rm -rf "$1" "$root"; mkdir -p "$1" "$root/lib/modules"
	if img=$(bash "$RSWAP_TOP/scripts/guest-image.sh") && kver=$(cat "$img/kver") \
		&& debugfs -R "rdump /lib/modules/$kver $root/lib/modules" "$img/rootfs.ext4" \
		&& install -D -m 644 "$RSWAP_TOP/rswap.ko" "$root/lib/modules/$kver/updates/rswap.ko" \
		&& depmod -b "$root" "$kver" && cp "$root/lib/modules/$kver"/modules.* "$1"/; then
		touch "$1/done"
	else
		touch "$1/failed"
	fi
	rm -rf "$root"
}

# prop FILE KEY: a property of `systemctl show` output.
prop() { sed -n "s/^$2=//p" "$1" 2>/dev/null | head -1; }
secs() { awk -v us="${1:-0}" 'BEGIN { printf "%.1f", us / 1e6 }'; }

# swap active after boot.
t_swap_after_boot() {
	if grep -q '^/dev/rswap0 ' "$C/swaps" 2>/dev/null; then
		ktap_pass
		ktap_diag "$(grep '^/dev/rswap0 ' "$C/swaps")"
		s0=$C/show/rswap@swap0.service
		up_end=$(prop "$s0" ExecMainExitTimestampMonotonic) up_begin=$(prop "$s0" ExecMainStartTimestampMonotonic)
		ktap_diag "swap on /dev/rswap0 $(secs "$(prop "$s0" ActiveEnterTimestampMonotonic)") s after the kernel started; rswapctl up took $(secs $(( ${up_end:-0} - ${up_begin:-0} ))) s; multi-user.target at $(secs "$(prop "$C/show/multi-user.target" ActiveEnterTimestampMonotonic)") s"
	else
		ktap_fail "swaps: $(cat "$C/swaps" 2>&1); $(tail -5 "$C/status" 2>&1); $(tail -5 "$C/serial.log")"
	fi
}
ktap_test "systemd boot: the client guest has /dev/rswap0 in /proc/swaps after boot (rswap@swap0, server in the other guest)" t_swap_after_boot

# the unit's state ($u: its properties, which the next test reads too).
t_unit_state() {
	u=$C/show/rswap@swap0.service
	st="$(prop "$u" ActiveState) $(prop "$u" SubState) $(prop "$u" Result)"
	if [ "$st" = "active exited success" ]; then ktap_pass
	else ktap_fail "ActiveState SubState Result: $st; $(head -20 "$C/status" 2>&1)"; fi
}
ktap_test "systemd boot: rswap@swap0.service is active (exited) with result success" t_unit_state

# ordering at boot: up started after network-online.target and the test network were
# active, and was done before swap.target was reached.
t_boot_order() {
	net_on=$(prop "$C/show/network-online.target" ActiveEnterTimestampMonotonic)
	net_up=$(prop "$C/show/rswap-test-net.service" ActiveEnterTimestampMonotonic)
	up_start=$(prop "$u" ExecMainStartTimestampMonotonic)
	up_done=$(prop "$u" ActiveEnterTimestampMonotonic)
	swap_t=$(prop "$C/show/swap.target" ActiveEnterTimestampMonotonic)
	order="network up $(secs "$net_up") s, network-online.target $(secs "$net_on") s, rswapctl up started $(secs "$up_start") s, rswap@swap0 active $(secs "$up_done") s, swap.target $(secs "$swap_t") s"
	if [ "${net_up:-0}" -gt 0 ] && [ "${net_on:-0}" -ge "$net_up" ] && [ "${up_start:-0}" -ge "$net_on" ] \
		&& [ "${up_done:-0}" -ge "$up_start" ] && [ "${swap_t:-0}" -ge "$up_done" ]; then
		ktap_pass; ktap_diag "$order"
	else
		ktap_fail "$order"
	fi
}
ktap_test "systemd boot: rswap@swap0 started after the network (network-online.target) and was up before swap.target" t_boot_order

# the server unit, Type=notify.
t_server_unit() {
	v=$S/show/rswap-server.service
	st="$(prop "$v" Type) $(prop "$v" ActiveState) $(prop "$v" SubState)"
	if [ "$st" = "notify active running" ] && [[ $(prop "$v" StatusText) == "listening on "* ]] \
		&& [ "$(prop "$v" NRestarts)" = 0 ]; then
		ktap_pass
		ktap_diag "StatusText=$(prop "$v" StatusText); ready $(secs "$(prop "$v" ActiveEnterTimestampMonotonic)") s after the server guest's kernel started"
	else
		ktap_fail "Type ActiveState SubState: $st; StatusText=$(prop "$v" StatusText); NRestarts=$(prop "$v" NRestarts); $(grep rswap-server "$S/journal" 2>/dev/null | tail -5)"
	fi
}
ktap_test "systemd boot: rswap-server.service (Type=notify) is active (running): READY=1 and its STATUS= reached systemd" t_server_unit

# the server's log in the journal, with priorities: -p warning shows the refusal of the
# client the allow-list does not know, and none of the info lines.
t_journal_priority() {
	w=$S/journal-server-warning a=$S/journal-server
	if grep -q 'level=warn event=connect_rejected .*reason=AuthRequired' "$w" 2>/dev/null \
		&& ! grep -q 'level=info' "$w" && grep -q 'level=info event=listening' "$a" \
		&& ! grep -q '^<[0-9]>' "$a"; then
		ktap_pass
		ktap_diag "journalctl -p warning: $(grep -c . "$w") of the server's $(grep -c . "$a") lines; $(grep -m1 -o 'level=warn event=connect_rejected .*reason=[A-Za-z]*' "$w")"
	else
		ktap_fail "-p warning: $(head -5 "$w" 2>&1); all: $(grep -E 'connect_rejected|listening' "$a" 2>&1 | head -3); client: $(cat "$C/unknown-add" 2>&1)"
	fi
}
ktap_test "systemd boot: journalctl -p warning -u rswap-server shows the server's warning (a refused client) and none of its info lines" t_journal_priority

# the watchdog: WatchdogSec= in the unit, fed by the event loop after READY=1.
t_watchdog() {
	v=$S/show/rswap-server.service
	ready=$(prop "$v" ActiveEnterTimestampMonotonic) fed=$(prop "$v" WatchdogTimestampMonotonic)
	if [ "$(prop "$v" WatchdogUSec)" = 30s ] && [ "${fed:-0}" -gt $(( ${ready:-0} + 10000000 )) ] \
		&& [ "$(prop "$v" NRestarts)" = 0 ] && [ "$(prop "$v" SubState)" = running ]; then
		ktap_pass
		ktap_diag "WatchdogSec 30s, last fed $(secs $(( fed - ready ))) s after ready"
	else
		ktap_fail "WatchdogUSec=$(prop "$v" WatchdogUSec) ready=$ready last fed=$fed NRestarts=$(prop "$v" NRestarts) SubState=$(prop "$v" SubState)"
	fi
}
ktap_test "systemd boot: rswap-server.service has WatchdogSec=30s and its event loop feeds it (fed again after ready, never restarted)" t_watchdog

# the client's region at the server (the report's first view of it live; later ones
# may show it in its grace period, after the client guest powered off).
t_region_live() {
	if grep -qE '^0x5301 .* live ' "$S/server-status-live" 2>/dev/null; then
		ktap_pass; ktap_diag "$(grep -E '^0x5301 ' "$S/server-status-live")"
	else
		ktap_fail "$(cat "$S/server-status" 2>&1)"
	fi
}
ktap_test "systemd boot: the server's status socket lists the client's region, live" t_region_live

# ordering cycles, unit files.
t_no_cycles() {
	cyc=$(grep -hiE 'ordering cycle|break(ing)? ordering cycle|deleted to break' "$C/journal" "$S/journal" 2>/dev/null || true)
	ver=$(cat "$C/verify" "$S/verify" 2>/dev/null)
	if [ -s "$C/journal" ] && [ -s "$S/journal" ] && [ -z "$cyc" ] \
		&& [ "$(grep -c '^exit 0$' <<<"$ver")" = 2 ] && [ "$(grep -vc '^exit 0$' <<<"$ver")" = 0 ]; then
		ktap_pass
	else
		ktap_fail "cycles: ${cyc:-none}; verify: $ver; journals: $(wc -l "$C/journal" "$S/journal" 2>&1 | tr '\n' ' ')"
	fi
}
ktap_test "systemd boot: no ordering cycle in either guest's journal, and systemd-analyze verify passes the units" t_no_cycles

# the target whose server does not answer (its drop-in waits 5 s for it, not the
# packaged 60: the packaged wait must end well within the packaged TimeoutStartSec).
t_bad_target() {
	unit=$RSWAP_TOP/packaging/systemd/rswap@.service
	pw=$(sed -n 's/^ExecStart=.* up --wait \([0-9]*\) .*/\1/p' "$unit")
	pt=$(sed -n 's/^TimeoutStartSec=\([0-9]*\)$/\1/p' "$unit")
	b=$C/show/rswap@bad.service
	b_end=$(prop "$b" ExecMainExitTimestampMonotonic) b_start=$(prop "$b" ExecMainStartTimestampMonotonic)
	took=$(( ${b_end:-0} - ${b_start:-0} ))
	limit=$(prop "$b" TimeoutStartUSec)   # e.g. 2min
	st="$(prop "$b" ActiveState) $(prop "$b" Result)"
	mu=$(prop "$C/show/multi-user.target" ActiveState)
	if [ "$st" = "failed exit-code" ] && [ "$took" -gt 0 ] && [ "$took" -lt 120000000 ] && [ "$mu" = active ] \
		&& [ "$(cat "$C/configfs" 2>/dev/null)" = swap0 ] && [ -n "$pw" ] && [ -n "$pt" ] \
		&& [ $((pw + 30)) -le "$pt" ]; then
		ktap_pass
		ktap_diag "rswap@bad failed after $(secs "$took") s (TimeoutStartSec $limit); $(grep -m1 'rswapctl: up bad: ' "$C/status" | sed 's/.*rswapctl: /rswapctl: /')"
		ktap_diag "the packaged rswap@.service waits ${pw} s for its server, within TimeoutStartSec=${pt} (with 30 s to spare)"
		ktap_diag "system state after boot: $(cat "$C/system-state"); failed units: $(awk '{print $1}' "$C/failed-units" | tr '\n' ' ')"
	else
		ktap_fail "ActiveState Result: $st; took $(secs "$took") s (limit $limit); multi-user.target $mu; configfs: $(cat "$C/configfs" 2>&1); packaged: --wait ${pw:-?}, TimeoutStartSec=${pt:-?}"
	fi
}
ktap_test "systemd boot: rswap@bad (no listener at its port) fails within TimeoutStartSec, the boot still reaches multi-user.target, and no configfs target is left" t_bad_target

# the metrics timer: node_exporter's textfile directory of each guest.
t_metrics_client() {
	f=$C/rswap.prom
	read -r first second < "$C/rswap.prom.mtimes" 2>/dev/null
	age=$(cat "$f.age" 2>/dev/null)
	ls=$(tr '\n' ' ' < "$C/prom-ls" 2>/dev/null)
	r="$(prop "$C/show/rswap-metrics.service" Result) $(prop "$C/show/rswap-metrics.timer" ActiveState)"
	if grep -q '^rswap_target_state{target="swap0",client_id="21249",state="connected"} 1$' "$f" 2>/dev/null \
		&& grep -q '^rswap_target_info{target="swap0",client_id="21249",device="rswap0",' "$f" \
		&& [ "${first:-0}" -gt 0 ] && [ "${second:-0}" -gt "$first" ] && [ "${age:-99}" -le 5 ] \
		&& [ "$ls" = "rswap.prom " ] && [ "$r" = "success active" ]; then
		ktap_pass
		ktap_diag "rswap.prom rewritten $(( second - first )) s after its first write, $age s old when read; $(grep -c '^rswap_' "$f") samples"
	else
		ktap_fail "mtimes ${first:-none} ${second:-none}, age ${age:-none}, directory: $ls; Result ActiveState: $r; $(grep -E 'swap0.*state="connected"|^rswap_target_info' "$f" 2>&1 | head -3)"
	fi
}
ktap_test "systemd boot: rswap-metrics.timer writes the client's metrics (swap0 connected) into node_exporter's directory, rewritten 15 s later, no temporary file left" t_metrics_client

t_metrics_server() {
	age=$(cat "$S/rswap-server.prom.age" 2>/dev/null)
	ls=$(tr '\n' ' ' < "$S/prom-ls" 2>/dev/null)
	r=$(prop "$S/show/rswap-metrics.service" Result)
	if grep -q '^rswap_server_client_region_bytes{client_id="21249"} 67108864$' "$S/rswap-server.prom-live" 2>/dev/null \
		&& grep -q '^# TYPE rswap_server_clients gauge$' "$S/rswap-server.prom" \
		&& [ "${age:-99}" -le 25 ] && [ "$ls" = "rswap-server.prom " ] && [ "$r" = success ]; then
		ktap_pass
		ktap_diag "rswap-server.prom $age s old when last read; $(grep '^rswap_server_clients ' "$S/rswap-server.prom")"
	else
		ktap_fail "age ${age:-none}, directory: $ls; Result: $r; $(grep -E '^rswap_server_client' "$S/rswap-server.prom" 2>&1 | head -3)"
	fi
}
ktap_test "systemd boot: rswap-metrics.timer writes the server's metrics (the client's region) into node_exporter's directory, current (at most 25 s old), and no client file there" t_metrics_server

# shutdown, from the client's console: systemd's "Stopped rswap@swap0..." and the
# network unit's note come in this order, the note says no rswap swap or target is
# left, and the kernel powered off.
t_poweroff() {
	con=$out/client-console.txt
	sed 's/\x1b\[[0-9;]*m//g; s/\r$//' "$C/serial.log" > "$con"   # without colours and CRs
	stopped=$(grep -n 'Stopped rswap@swap0' "$con" | head -1 | cut -d: -f1)
	netdown=$(grep -n 'rswap-test: network going down' "$con" | head -1 | cut -d: -f1)
	note=$(grep -m1 -o 'rswap-test: network going down.*' "$con")
	if [ -n "$stopped" ] && [ -n "$netdown" ] && [ "$stopped" -lt "$netdown" ] \
		&& [[ $note == *"rswap swap areas active: 0; rswap targets: none" ]] \
		&& grep -q 'reboot: Power down' "$con"; then
		ktap_pass; ktap_diag "$note"
	else
		ktap_fail "stopped at line ${stopped:-none}, network down at line ${netdown:-none}: ${note:-no note}; $(grep -E 'rswap|Power down' "$con" | tail -8)"
	fi
}
ktap_test "systemd boot: at poweroff, rswap@swap0 stops (swapoff, target removed) before the network goes down, and the guest powers off" t_poweroff

ktap_run setup
