#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# samples/rdma_rw: the sample module connects to rswap-server through rswap's safe RDMA
# layer, RDMA-WRITEs one buffer and RDMA-READs it back; with no server it fails to load.
# samples/rdma_bench: the benchmark module (make bench's transport reference) measures
# 4 KiB RDMA READ and WRITE at QD1 and QD4 for a moment against the same server, reports
# non-zero figures and unloads; with no server it fails to load.
. "$RSWAP_TOP/tests/lib/guest.sh"
KO=$RSWAP_TOP/rswap_rdma_rw.ko
KO_BENCH=$RSWAP_TOP/rswap_rdma_bench.ko
SRV=$RSWAP_TOP/tools/rswap-server/target/release/rswap-server
IP=${RSWAP_GUEST_IP:-192.0.2.1}
OUT=$RSWAP_OUT/35-sample
mkdir -p "$OUT"
setup() {
	if [ ! -f "$KO" ] || [ ! -f "$KO_BENCH" ] || [ ! -x "$SRV" ] || ! rdma_up >/dev/null; then
		ktap_skip_rest "needs rswap_rdma_rw.ko, rswap_rdma_bench.ko, rswap-server and rxe"
	fi
	rdma_modules
	hex=$(printf '0x%02x%02x%02x%02x' ${IP//./ })
	"$SRV" --listen "$IP:18517" --size 8M --insecure >"$OUT/server.log" 2>&1 &
	spid=$!
	for _ in $(seq 100); do grep -q listening "$OUT/server.log" && break; sleep 0.1; done
}

t_sample() {
	dmesg_mark "sample"
	if insmod "$KO" addr="$hex" port=18517 \
		&& dmesg | grep -q 'rswap_rdma_rw: wrote [0-9]* bytes with RDMA WRITE and read them back with RDMA READ: identical' \
		&& rmmod rswap_rdma_rw; then
		ktap_pass
		ktap_diag "$(dmesg | grep 'rswap_rdma_rw:' | sed 's/^\[[^]]*\] //')"
	else
		ktap_fail "$(dmesg | grep rswap_rdma_rw | tail -5)"
	fi
}
ktap_test "sample: RDMA WRITE then READ of one buffer through the safe layer round-trips" t_sample

# The benchmark: every figure of the four phases must be there and non-zero.
bench_ok() {
	local line n=0 k
	for line in "read qd=1" "read qd=4" "write qd=1" "write qd=4"; do
		set -- $(dmesg | grep -o "rswap_rdma_bench: result op=${line% *} ${line#* } .*" | tail -1)
		[ $# -gt 0 ] || { echo "no result line for $line"; return 1; }
		for k in ops ns ops_per_s lat_mean_ns lat_p50_ns lat_p99_ns wc_mean_ns; do
			[[ " $* " =~ \ $k=([0-9]+)\  ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] \
				|| { echo "$line: $k missing or zero: $*"; return 1; }
		done
		n=$((n + 1))
	done
	[ $n = 4 ]
}
# Stops the server (of the setup) at its end: the tests after it run without one.
t_bench() {
	dmesg_mark "bench"
	if timeout 60 insmod "$KO_BENCH" addr="$hex" port=18517 ms=300 qd=4 size_mb=4 \
		&& why=$(bench_ok) && timeout 20 rmmod rswap_rdma_bench; then
		ktap_pass
		ktap_diag "$(dmesg | grep 'rswap_rdma_bench:' | sed 's/^\[[^]]*\] //')"
	else
		ktap_fail "${why:-} $(dmesg | grep rswap_rdma_bench | tail -6)"
		rmmod rswap_rdma_bench 2>/dev/null
	fi
	kill "$spid"; wait "$spid"
}
ktap_test "bench: 4 KiB READ and WRITE at QD1 and QD4 report non-zero figures, then rmmod" t_bench

t_sample_no_server() {
	start=$(date +%s)
	if ! insmod "$KO" addr="$hex" port=18517 2>/dev/null && [ $(( $(date +%s) - start )) -lt 20 ] \
		&& ! grep -q '^rswap_rdma_rw ' /proc/modules; then
		ktap_pass
	else
		ktap_fail
		rmmod rswap_rdma_rw 2>/dev/null
	fi
}
ktap_test "sample: with no server the module refuses to load, promptly" t_sample_no_server

t_bench_no_server() {
	start=$(date +%s)
	if ! timeout 60 insmod "$KO_BENCH" addr="$hex" port=18517 ms=300 2>/dev/null \
		&& [ $(( $(date +%s) - start )) -lt 20 ] && ! grep -q '^rswap_rdma_bench ' /proc/modules; then
		ktap_pass
		ktap_diag "$(dmesg | grep 'rswap_rdma_bench:' | tail -1 | sed 's/^\[[^]]*\] //')"
	else
		ktap_fail
		rmmod rswap_rdma_bench 2>/dev/null
	fi
}
ktap_test "bench: with no server the module refuses to load, promptly, saying why" t_bench_no_server

ktap_test "dmesg: no BUG/WARNING/Oops in the sample test" ktap_check dmesg_clean

ktap_run setup
