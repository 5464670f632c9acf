#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The memory-server guest of a two-guest run: soft-RoCE on eth0 and rswap-server on it.
# The client guest ends by powering off with a target still enabled (client id
# $GHOST_ID, on a server of its own, port $GHOST_PORT): no disconnect reaches the server,
# so only the server's keep-alive can notice that client is gone. This script waits for
# that and for the region to be freed after the grace period, prints its KTAP result on
# the console, and ends; the host stops the guest if it does not.
. "$RSWAP_TOP/tests/lib/guest.sh"
GHOST_ID=$((0x5a5a))
# The default period. With 1 s the server, whose probes go unanswered while the client
# drops its own packets, disconnected the client's queues before the client's request
# timeout fired in the test that checks that timeout (seen once in four runs).
KEEPALIVE_MS=5000
GRACE_S=20
LOG=$RSWAP_OUT/server.log
# The ghost's server: only the powered-off client's region is on it, so its keep-alive
# and grace are short (with the main server's, the guest waited about 30 s for the
# region to go), but for the debug kernel, where the main server's values stay.
GHOST_PORT=7475 GHOST_KEEPALIVE_MS=1000 GHOST_GRACE_S=3
[[ $(uname -r) != *-rswap-debug ]] || GHOST_KEEPALIVE_MS=$KEEPALIVE_MS GHOST_GRACE_S=$GRACE_S
GLOG=$RSWAP_OUT/server-ghost.log
# The legs of the client's disk over three servers (its late-binding test): one
# rswap-server each, on an address of its own, so that the client can slow one of them.
LEG_IPS=(192.0.2.12 192.0.2.13 192.0.2.14)
LEG_PORTS=(7481 7482 7483)
ts() { sed -n 's/^ts=\([0-9.]*\) .*/\1/p' <<<"$1"; }

setup() {
	rdma_up || { echo "server guest: soft-RoCE unavailable"; exit 1; }
	# The grace period outlasts the client's 12 s network blackout test, so its region
	# survives that (the keep-alive closes its queues within about two periods).
	"$RSWAP_TOP/tools/rswap-server/target/release/rswap-server" \
		--listen "$RSWAP_GUEST_IP:7471" --size 512M --grace $GRACE_S --keepalive-ms $KEEPALIVE_MS --insecure \
		>"$LOG" 2>&1 &
	SPID=$!
	"$RSWAP_TOP/tools/rswap-server/target/release/rswap-server" \
		--listen "$RSWAP_GUEST_IP:$GHOST_PORT" --size 32M --grace $GHOST_GRACE_S \
		--keepalive-ms $GHOST_KEEPALIVE_MS --insecure >"$GLOG" 2>&1 &
	GPID=$!
	local i
	for i in 0 1 2; do
		ip addr add "${LEG_IPS[$i]}/24" dev eth0
		"$RSWAP_TOP/tools/rswap-server/target/release/rswap-server" \
			--listen "${LEG_IPS[$i]}:${LEG_PORTS[$i]}" --size 16M --insecure \
			>"$RSWAP_OUT/leg$i.log" 2>&1 &
	done
}

# The whole client run comes first: wait for the ghost's region, then for its end.
t_ghost() {
	for _ in $(seq 3000); do
		grep -q "event=descriptor_posted client_id=$GHOST_ID " "$GLOG" && break
		kill -0 $GPID 2>/dev/null || break
		sleep 0.5
	done
	freed=
	for _ in $(seq 240); do
		freed=$(grep -m1 "event=region_freed client_id=$GHOST_ID " "$GLOG") && break
		sleep 0.5
	done
	closed=$(grep "event=queue_closed client_id=$GHOST_ID " "$GLOG" | tail -1)
	if [ -n "$freed" ] && [[ $closed == *why=keepalive_* ]]; then
		ktap_pass
		ktap_diag "last queue closed: ${closed#* level=info }"
		ktap_diag "region freed $(awk -v a="$(ts "$closed")" -v b="$(ts "$freed")" 'BEGIN { printf "%.1f", b - a }') s after (keep-alive ${GHOST_KEEPALIVE_MS} ms, grace ${GHOST_GRACE_S} s): ${freed#* level=info }"
	else
		ktap_fail "$(grep "client_id=$GHOST_ID " "$GLOG" | tail -4 | tr '\n' ' ')"
	fi
	kill $SPID $GPID 2>/dev/null
	wait $SPID $GPID 2>/dev/null
}
ktap_test "two guests: server keep-alive: the client guest powers off with its disk enabled; the server closes its queues (why=keepalive_*) and frees its region after the grace period" t_ghost

ktap_run setup
