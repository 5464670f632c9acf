#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# IPv6 over soft-RoCE in one guest: the target takes its server's address and its source
# address as nvme-rdma takes traddr and host_traddr (a dotted quad, or IPv6 with an
# optional %scope, which names an interface for a link-local address), refuses addresses
# of no single host, and carries data to a server listening on an IPv6 address.
. "$RSWAP_TOP/tests/lib/guest.sh"

KO=$RSWAP_TOP/rswap.ko
SRV=$RSWAP_TOP/tools/rswap-server/target/release/rswap-server
CTL=$RSWAP_TOP/tools/rswapctl/target/release/rswapctl
IP6=fd00:5::1
PORT=18523
CFG=/sys/kernel/config/rswap
T=$CFG/v6
OUT=$RSWAP_OUT/32-ipv6
mkdir -p "$OUT"

setup() {
	target_suite_start
	ip -6 addr add $IP6/64 dev eth0 nodad || ktap_skip_rest "no IPv6 on eth0"
	dmesg_mark "32-ipv6"
	grep -q '^rswap ' /proc/modules || rswap_load || ktap_skip_rest "insmod failed"
	server_start "$OUT/server.log" --listen "[$IP6]:$PORT" --size 64M --insecure >/dev/null \
		|| ktap_skip_rest "rswap-server does not listen on [$IP6]:$PORT: $(tail -2 "$OUT/server.log")"
}

t_addresses() {
	mkdir $T
	bad=0 why=
	try() { # attr value: must be refused with a reason in last_error
		if echo "$2" > "$T/$1" 2>/dev/null; then bad=1; why+="$1=$2 accepted; "; return; fi
		[[ $(cat $T/last_error) == "$1: "* ]] || { bad=1; why+="$1=$2: last_error '$(cat $T/last_error)'; "; }
	}
	for v in fd00::zz 1.2.3 fd00:::1 "fe80::1%nosuchif" hello; do try addr "$v"; done
	try addr ff02::1
	multicast=$(cat $T/last_error)
	for v in 0.0.0.0 :: 255.255.255.255 224.0.0.1; do try addr "$v"; done
	try src_addr fe80::zz
	echo 192.0.2.1 > $T/addr && [ "$(cat $T/addr)" = 192.0.2.1 ] || { bad=1; why+="IPv4 addr; "; }
	echo fd00:5:0:0:0:0:0:1 > $T/addr && [ "$(cat $T/addr)" = $IP6 ] || { bad=1; why+="addr shows $(cat $T/addr); "; }
	[ "$(cat $T/src_addr)" = "(any)" ] || { bad=1; why+="src_addr default $(cat $T/src_addr); "; }
	echo $IP6 > $T/src_addr && [ "$(cat $T/src_addr)" = $IP6 ] || { bad=1; why+="src_addr shows $(cat $T/src_addr); "; }
	if [ $bad = 0 ]; then
		ktap_pass
		ktap_diag "multicast refused: $multicast"
	else
		ktap_fail "$why"
	fi
}
ktap_test "ipv6: addr and src_addr take IPv6 (shown compressed) and IPv4, and refuse bad text and addresses of no single host with a reason" t_addresses

t_connect() {
	echo $PORT > $T/port; echo 16M > $T/size; echo 2 > $T/queues
	if echo 1 > $T/enable && [[ $(cat $T/state) == connected* ]]; then
		DEV=/dev/$(cat $T/device)
		head -c 4M /dev/urandom > /tmp/v6data
		if dd if=/tmp/v6data of=$DEV bs=1M oflag=direct status=none \
			&& dd if=$DEV of=/tmp/v6back bs=1M count=4 iflag=direct status=none && cmp -s /tmp/v6data /tmp/v6back \
			&& dmesg | grep -q "rswap: rswap[0-9]*: .* at \[$IP6\]:$PORT" \
			&& grep -q "peer=\[\?$IP6\]\?:" "$OUT/server.log"; then
			ktap_pass
			ktap_diag "$(dmesg | grep "at \[$IP6\]" | tail -1 | sed 's/^\[[^]]*\] //')" "$(cat $T/state)"
		else
			ktap_fail "data or logs: $(dmesg | grep rswap | tail -3); $(grep -m2 queue_accepted "$OUT/server.log")"
		fi
	else
		ktap_fail "enable: $(cat $T/last_error); $(dmesg | grep rswap | tail -4)"
	fi
}
ktap_test "ipv6: a target with an IPv6 server and source address connects, and 4 MiB written read back identical" t_connect

# The same server through rswapctl, with the bracketed form of --server.
t_rswapctl() {
	if [ ! -x "$CTL" ]; then
		ktap_fail "rswapctl not built ($CTL)"
	elif o=$("$CTL" add v6ctl --server "[$IP6]:$PORT" --size 8M --queues 1 2>&1) \
		&& table=$("$CTL" list) && json=$("$CTL" list --json) \
		&& grep -q "^v6ctl .* \[$IP6\]:$PORT .*connected" <<<"$table" \
		&& grep -q "\"addr\": *\"$IP6\"" <<<"$json" && grep -q "\"port\": *$PORT" <<<"$json" \
		&& "$CTL" remove v6ctl && [ ! -e $CFG/v6ctl ]; then
		ktap_pass
		ktap_diag "$(grep '^v6ctl' <<<"$table")"
	else
		ktap_fail "add: $o; list: ${table:-}; json: $(tr -d '\n' <<<"${json:-}" | head -c 400)"
		"$CTL" remove v6ctl >/dev/null 2>&1 || true
	fi
}
ktap_test "ipv6: rswapctl add --server [ADDR]:PORT connects, list shows [ADDR]:PORT and --json the address, remove removes" t_rswapctl

t_teardown() {
	ok=1
	echo 0 > $T/enable || ok=0
	rmdir $T || ok=0
	rmmod rswap || ok=0
	if [ $ok = 1 ]; then ktap_pass; else ktap_fail "$(dmesg | tail -3)"; fi
	kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=
	ip -6 addr del $IP6/64 dev eth0 2>/dev/null
}
ktap_test "ipv6: disable, rmdir and rmmod work" t_teardown

t_dmesg() {
	dmesg_note_rxe_races
	ktap_check dmesg_clean
}
ktap_test "dmesg: no BUG/WARNING/Oops in the IPv6 tests" t_dmesg

ktap_run setup
