# SPDX-License-Identifier: GPL-2.0
# Shared pieces of the benchmark's guest scripts (source, do not run).
# Both guests source this: the server guest through tests/bench/server.sh, the client
# guest through tests/bench/client.sh (which, with --loopback, also runs the server part).

. "$RSWAP_TOP/tests/lib/guest.sh"

BENCH=$RSWAP_TOP/tests/bench
CTL_PORT=7100                              # tests/bench/ctl.py control channel
NVMET_PORT=4420                            # NVMe-oF RDMA service id
NVMET_NQN=nqn.2026-11.org.rswap:bench      # the benchmark's nvmet subsystem
PERF_PORT0=18515                           # first perftest port (one per test)
RSWAP_SERVER_PORT=7471                     # rswap-server's rdma_cm port (when it exists)
RSWAP_SERVER_PORT2=7472                    # a second rswap-server (rswap-md1's other half)

# Both guests load brd the same way, so in --loopback one guest can hold both disks:
# /dev/ram0 backs the nvmet namespace (server side), /dev/ram1 is the client's local disk.
BRD_SERVER_DEV=/dev/ram0
BRD_LOCAL_DEV=/dev/ram1
brd_load() { # SIZE_MB
	if [ -e /sys/module/brd ]; then
		[ -b "$BRD_LOCAL_DEV" ] || { echo "brd is loaded without $BRD_LOCAL_DEV"; return 1; }
		return 0
	fi
	modprobe brd rd_nr=2 rd_size=$(($1 * 1024)) max_part=0 || { echo "modprobe brd failed"; return 1; }
	for _ in $(seq 50); do [ -b "$BRD_LOCAL_DEV" ] && return 0; sleep 0.1; done
	echo "brd loaded but $BRD_LOCAL_DEV did not appear"; return 1
}

# Wait until a block device node exists: WAIT_BDEV DEV SECONDS
wait_bdev() {
	local i
	for i in $(seq $(($2 * 10))); do [ -b "$1" ] && return 0; sleep 0.1; done
	return 1
}

# Minimal JSON string quoting for values we write ourselves.
json_str() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr '\n\t' '  ')"; }
