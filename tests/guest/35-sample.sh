#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# samples/rdma_rw: the sample module connects to rswap-server through rswap's safe RDMA
# layer, RDMA-WRITEs one buffer and RDMA-READs it back; with no server it fails to load.
. "$RSWAP_TOP/tests/lib/guest.sh"
KO=$RSWAP_TOP/rswap_rdma_rw.ko
SRV=$RSWAP_TOP/tools/rswap-server/target/release/rswap-server
IP=${RSWAP_GUEST_IP:-192.0.2.1}
OUT=$RSWAP_OUT/35-sample
mkdir -p "$OUT"
ktap_plan 3
if [ ! -f "$KO" ] || [ ! -x "$SRV" ] || ! rdma_up >/dev/null; then
	for n in 1 2 3; do ktap_skip "sample $n" "needs rswap_rdma_rw.ko, rswap-server and rxe"; done
	ktap_finish
fi
modprobe -a ib_core rdma_cm
hex=$(printf '0x%02x%02x%02x%02x' ${IP//./ })
"$SRV" --listen "$IP:18517" --size 8M --insecure >"$OUT/server.log" 2>&1 &
spid=$!
for _ in $(seq 100); do grep -q listening "$OUT/server.log" && break; sleep 0.1; done
dmesg_mark "sample"
if insmod "$KO" addr="$hex" port=18517 \
	&& dmesg | grep -q 'rswap_rdma_rw: wrote [0-9]* bytes with RDMA WRITE and read them back with RDMA READ: identical' \
	&& rmmod rswap_rdma_rw; then
	ktap_pass "sample: RDMA WRITE then READ of one buffer through the safe layer round-trips"
	ktap_diag "$(dmesg | grep 'rswap_rdma_rw:' | sed 's/^\[[^]]*\] //')"
else
	ktap_fail "sample: RDMA WRITE then READ of one buffer through the safe layer round-trips" \
		"$(dmesg | grep rswap_rdma_rw | tail -5)"
fi
kill "$spid"; wait "$spid"
start=$(date +%s)
if ! insmod "$KO" addr="$hex" port=18517 2>/dev/null && [ $(( $(date +%s) - start )) -lt 20 ] \
	&& ! grep -q '^rswap_rdma_rw ' /proc/modules; then
	ktap_pass "sample: with no server the module refuses to load, promptly"
else
	ktap_fail "sample: with no server the module refuses to load, promptly"
	rmmod rswap_rdma_rw 2>/dev/null
fi
ktap_check "dmesg: no BUG/WARNING/Oops in the sample test" dmesg_clean
ktap_finish
