# SPDX-License-Identifier: GPL-2.0
# The block devices the benchmark compares (source, do not run; used by client.sh).
#
# A backend is one function, backend_<id>_setup, plus an optional backend_<id>_teardown,
# and one line in BACKENDS ("id:label:description"). setup runs on the client guest with
# $PEER (the memory-server guest's address; our own in --loopback), $DEV_MB (the device
# size the run wants) and the control channel `ctl run|spawn FUNC ARG...` (server.sh's
# functions on the peer). On success it sets BK_DEV to the block device and returns 0;
# when the backend cannot be built it sets BK_REASON (one line) and returns non-zero, and
# the results show the backend as "n/a" with that reason. $BK_DIR is the backend's results
# folder, for any extra record it wants to keep. setup may also set BK_FIO, the fio options
# that choose the engine of its fio jobs (an array; client.sh resets it to
# --ioengine=libaio before each setup; the fill always uses libaio), and BK_ZSWAP, the
# compressor of a zswap in front of the device (apps-client.sh; empty: zswap off).
# teardown also runs after a failed setup, so it must cope with a half-built backend.

# Run order (of the first round of fio jobs and of the swap workload; later rounds rotate
# it, see client.sh). The rswap family goes last: a crash of the driver under test must
# not cost the baselines' numbers.
BACKENDS=(
	"nvme_rdma:nvme-rdma:NVMe-oF RDMA (nvmet-rdma target, brd namespace on the memory-server guest)"
	"local:local:brd RAM disk on the client guest"
	"rswap:rswap:/dev/rswap0 backed by rswap-server on the memory-server guest"
	"rswap_uring:rswap-uring:/dev/rswap0 as rswap, fio with ioengine=io_uring (completions by interrupt, not polled)"
	"rswap_poll:rswap-poll:/dev/rswap0 with poll_queues (one per client vCPU, io_poll 1), fio with ioengine=io_uring hipri=1 (completions polled by the submitting task)"
	"rswap_sync:rswap-sync:/dev/rswap0 with sync_swapin=1 (BLK_FEAT_SYNCHRONOUS: swap reads pages back one at a time, without readahead)"
	"rswap_enc:rswap-enc:/dev/rswap0 with encrypt=1 (every block sealed with AES-256-GCM; reads opened in the RDMA completion)"
	"rswap_enc_wq:rswap-enc-wq:/dev/rswap0 with encrypt=1, rswap.ko crypt_workqueue=1 (reads opened in a workqueue)"
	"rswap_md:rswap-md1:md RAID1 (write-intent bitmap) over two rswap disks, each backed by its own rswap-server on the memory-server guest"
	"rswap_ec42:rswap-4+2:/dev/rswap0 with code 4+2 over six rswap-servers on the memory-server guest (4 data and 2 parity fragments a page, extra_reads 1)"
	"rswap_ec21:rswap-2+1:/dev/rswap0 with code 2+1 over three rswap-servers on the memory-server guest (2 data fragments and their XOR a page, extra_reads 1)"
	"rswap_ec42_d0:rswap-4+2-d0:/dev/rswap0 as rswap-4+2 with extra_reads 0 (a read asks the four data fragments only, straight into the request's pages)"
)
# The swap backends only `make bench-apps` has (tests/bench/apps-client.sh), beside the
# ones above it shares (rswap, rswap-enc, rswap-md1, nvme-rdma): the alternatives a user
# picks from on one machine. The zram and virtio-disk ones must produce their figures
# there; zswap-rswap is optional like the rest of the rswap family.
APP_BACKENDS=(
	"zram_lz4:zram-lz4:zram (compressed RAM disk on the client guest), lz4"
	"zram_zstd:zram-zstd:zram (compressed RAM disk on the client guest), zstd"
	"vdisk:virtio-disk:the client guest's scratch virtio disk (a file on the host: the local SSD stand-in)"
	"zswap_rswap:zswap-rswap:zswap (lz4, shrinker on) in front of /dev/rswap0: compressed pages stay in the client's RAM, the coldest are written back to rswap"
)
# Backends that run the swap workload only (no fill, no fio jobs).
SWAP_ONLY=(rswap_sync)
# Backends that run the fill and the fio jobs only (no swap workload).
FIO_ONLY=(rswap_uring rswap_poll rswap_ec42_d0)
# Backends that may be "n/a" without failing the run (the driver under test, while it is
# not built, and what is built on it); the baselines must always produce their numbers.
OPTIONAL=(rswap rswap_uring rswap_poll rswap_sync rswap_enc rswap_enc_wq rswap_md rswap_ec42 rswap_ec21 rswap_ec42_d0
	zswap_rswap)
# What client.sh --quick (make check's smoke test, tests/host/60-bench-quick.sh) leaves
# out, to keep make check's time: ID (the whole backend, n/a), ID:fio (its fill and fio
# jobs), ID:swap (its swap workload), ID:JOB (fio job JOB) and ID:later (every round but
# the first). rswap-4+2 keeps one fill and its QD32 read and rswap-md1 its swap workload,
# with their remote memory (REMOTE_MEM); rswap-2+1 and rswap-4+2-d0 run in full runs only. The variants of
# rswap's own set-up run their fill and the QD1 and QD32 random reads once (what the
# polled I/O targets use; the other jobs, about 1.2 s each under TCG, add nothing the
# quick run checks), the encrypted ones without their swap workload (56-encrypt swaps on
# an encrypted disk), and rswap-sync (swap only, 40-swap's sync_swapin test covers its
# path) not at all: their swap runs were most of the quick bench's time.
QUICK_SKIP=(rswap_ec21 rswap_ec42_d0 rswap_md:fio rswap_ec42:swap rswap_ec42:later rswap_ec42:rr_qd1
	rswap_ec42:rw_qd1 rswap_ec42:rw_qd32 rswap_ec42:seqread
	rswap_sync rswap_uring:later rswap_poll:later rswap_enc:swap rswap_enc:later
	rswap_enc_wq:swap rswap_enc_wq:later
	rswap_uring:rw_qd1 rswap_uring:rw_qd32 rswap_uring:seqread
	rswap_poll:rw_qd1 rswap_poll:rw_qd32 rswap_poll:seqread
	rswap_enc:rw_qd1 rswap_enc:rw_qd32 rswap_enc:seqread
	rswap_enc_wq:rw_qd1 rswap_enc_wq:rw_qd32 rswap_enc_wq:seqread)
swap_only() { [[ " ${SWAP_ONLY[*]} " == *" $1 "* ]]; }        # ID
fio_only() { [[ " ${FIO_ONLY[*]} " == *" $1 "* ]]; }          # ID
backend_optional() { [[ " ${OPTIONAL[*]} " == *" $1 "* ]]; }  # ID
# quick_skip ID [WHAT]: whether this run (QUICK=1: --quick) leaves ID, or its WHAT, out.
quick_skip() { [ "${QUICK:-0}" = 1 ] && [[ " ${QUICK_SKIP[*]} " == *" $1${2:+:$2} "* ]]; }
runs_fio() { ! swap_only "$1" && ! quick_skip "$1" && ! quick_skip "$1" fio; }  # ID
runs_swap() { ! fio_only "$1" && ! quick_skip "$1" && ! quick_skip "$1" swap; } # ID
# The backends whose remote memory the results give (report.py, "Redundant swap"): after
# the first set-up of each, what its rswap-servers allocated (the sum of their regions,
# srv_rswap_server_allocated) and the size of its swap device, in BK_DIR/remote-mem.txt.
REMOTE_MEM=(rswap rswap_md rswap_ec42 rswap_ec21)
remote_mem_record() { # ID
	local out f=$BK_DIR/remote-mem.txt
	[[ " ${REMOTE_MEM[*]} " == *" $1 "* ]] && [ ! -s "$f" ] || return 0
	out=$(ctl run rswap_server_allocated 2>&1) || { echo "bench client: ${BK_LABEL[$1]}: remote memory: $out"; return 1; }
	echo "$out device_bytes=$(($(cat "/sys/block/${BK_DEV#/dev/}/size") * 512))" > "$f"
}

# ---- HOOK: rswap -----------------------------------------------------------------------
# Create /dev/rswapN backed by rswap-server on $PEER and set BK_DEV: start the server
# (tests/bench/server.sh srv_rswap_server_start), insmod rswap.ko from the work tree,
# configure /sys/kernel/config/rswap/bench (Documentation/configuration.md), enable.
# With RSWAP_BK_CODE (K+R) the target is one disk over k + r servers (`code` and
# `servers`), each on its own port from $RSWAP_SERVER_PORT up and each holding a region
# of size / k. Reports "not available" while rswap.ko or rswap-server is not built.
RSWAP_CFG=/sys/kernel/config/rswap/bench
# What the rswap family's setup varies: encrypt=1, sync_swapin=1 and poll_queues on the
# target, its code and extra_reads, and rswap.ko's parameters.
RSWAP_BK_ENCRYPT=0 RSWAP_BK_SYNC=0 RSWAP_BK_POLLQ= RSWAP_BK_PARAMS= RSWAP_BK_CODE= RSWAP_BK_EXTRA=

# The set-up pieces the rswap backends share (rswap and its variants, rswap-md1,
# rswap-4+2, rswap-2+1); each sets BK_REASON and fails when it cannot do its part.
# rswap_servers MB PORT...: an rswap-server for a region of MB MiB on $PEER on each PORT.
rswap_servers() {
	local out mb=$1
	shift
	[ -f "$RSWAP_TOP/rswap.ko" ] || { BK_REASON="not available: rswap.ko is not built (make)"; return 1; }
	out=$(ctl run rswap_server_start "$PEER" "$mb" "$@" 2>&1) \
		|| { BK_REASON="rswap-server on $PEER: $(echo "$out" | tail -1)"; return 1; }
}
# rswap_insmod [PARAM...]: rswap.ko loaded, with PARAMs when this loads it.
rswap_insmod() {
	local out
	grep -q '^rswap ' /proc/modules && return 0
	out=$(rswap_load "$@" 2>&1) || { BK_REASON="insmod rswap.ko failed: $(echo "$out" | tail -1)"; return 1; }
}
# rswap_enable CFG: enable the configured target CFG and wait for its disk, RSWAP_DEV.
rswap_enable() {
	timeout 120 sh -c "echo 1 > $1/enable" \
		|| { BK_REASON="enable of $1 failed: $(dmesg | grep rswap | tail -1)"; return 1; }
	RSWAP_DEV=/dev/$(cat "$1/device")
	wait_bdev "$RSWAP_DEV" 30 || { BK_REASON="enabled $1, but $RSWAP_DEV did not appear"; return 1; }
}
# rswap_down CFG...: disable and remove each target CFG, unload rswap.ko and stop every
# rswap-server on $PEER.
rswap_down() {
	local c
	for c in "$@"; do
		[ -d "$c" ] || continue
		timeout 120 sh -c "echo 0 > $c/enable" 2>/dev/null
		rmdir "$c" 2>/dev/null
	done
	grep -q '^rswap ' /proc/modules && timeout 60 rmmod rswap 2>/dev/null
	ctl run rswap_server_stop >/dev/null 2>&1
	true
}

backend_rswap_setup() {
	local k=1 n=1 i ports=() list=
	if [ -n "$RSWAP_BK_CODE" ]; then k=${RSWAP_BK_CODE%+*} n=$((k + ${RSWAP_BK_CODE#*+})); fi
	for ((i = 0; i < n; i++)); do
		ports+=($((RSWAP_SERVER_PORT + i))) list+="${list:+,}$PEER:$((RSWAP_SERVER_PORT + i))"
	done
	rswap_servers $(((DEV_MB + k - 1) / k)) "${ports[@]}" || return 1
	# shellcheck disable=SC2086 # the parameters are words
	rswap_insmod $RSWAP_BK_PARAMS || return 1
	mkdir -p "$RSWAP_CFG" || { BK_REASON="no rswap configfs directory $RSWAP_CFG"; return 1; }
	if [ -n "$RSWAP_BK_CODE" ]; then
		echo "$RSWAP_BK_CODE" > "$RSWAP_CFG/code" && echo "$list" > "$RSWAP_CFG/servers" \
			&& { [ -z "$RSWAP_BK_EXTRA" ] || echo "$RSWAP_BK_EXTRA" > "$RSWAP_CFG/extra_reads"; }
	else
		echo "$PEER" > "$RSWAP_CFG/addr" && echo "$RSWAP_SERVER_PORT" > "$RSWAP_CFG/port"
	fi && echo "${DEV_MB}M" > "$RSWAP_CFG/size" \
		|| { BK_REASON="configuring $RSWAP_CFG failed: $(cat "$RSWAP_CFG/last_error" 2>/dev/null || dmesg | grep rswap | tail -1)"; return 1; }
	# encrypt is written either way, so that the module's default does not decide.
	# aesni_intel: the kernel's fastest gcm(aes), which udev loads at boot on a CPU with
	# AES-NI (the guests have no udev).
	[ "$RSWAP_BK_ENCRYPT" = 1 ] && modprobe -q aesni_intel 2>/dev/null
	if [ -e "$RSWAP_CFG/encrypt" ] || [ "$RSWAP_BK_ENCRYPT" = 1 ]; then
		echo "$RSWAP_BK_ENCRYPT" > "$RSWAP_CFG/encrypt" \
			|| { BK_REASON="encrypt=$RSWAP_BK_ENCRYPT refused: $(cat "$RSWAP_CFG/last_error")"; return 1; }
	fi
	# sync_swapin too, when the module has it (a module without it cannot be rswap-sync).
	if [ -e "$RSWAP_CFG/sync_swapin" ] || [ "$RSWAP_BK_SYNC" = 1 ]; then
		echo "$RSWAP_BK_SYNC" > "$RSWAP_CFG/sync_swapin" \
			|| { BK_REASON="sync_swapin=$RSWAP_BK_SYNC refused: $(cat "$RSWAP_CFG/last_error" 2>/dev/null)"; return 1; }
	fi
	# poll_queues only when set (rswap-poll); the module's default is 0, no poll queues.
	if [ -n "$RSWAP_BK_POLLQ" ]; then
		[ -e "$RSWAP_CFG/poll_queues" ] \
			|| { BK_REASON="not available: rswap.ko has no poll_queues attribute (a build without poll queues)"; return 1; }
		echo "$RSWAP_BK_POLLQ" > "$RSWAP_CFG/poll_queues" \
			|| { BK_REASON="poll_queues=$RSWAP_BK_POLLQ refused: $(cat "$RSWAP_CFG/last_error" 2>/dev/null)"; return 1; }
	fi
	rswap_enable "$RSWAP_CFG" || return 1
	# The queue layout of each set-up: in the target's stats the poll queues are numbered
	# after the others (report.py counts the requests each kind served).
	echo "queues=$(cat "$RSWAP_CFG/queues") poll_queues=$(cat "$RSWAP_CFG/poll_queues" 2>/dev/null || echo 0)" \
		"io_poll=$(cat "/sys/block/${RSWAP_DEV#/dev/}/queue/io_poll")" >> "$BK_DIR/queues.txt"
	BK_DEV=$RSWAP_DEV
}
backend_rswap_teardown() {
	if [ -d "$RSWAP_CFG" ]; then
		# The counters (the encryption line: time per block sealed and opened), and the
		# enable's log line naming the gcm(aes) implementation.
		cat "$RSWAP_CFG/stats" > "$BK_DIR/stats.txt" 2>/dev/null
		dmesg | grep -o 'rswap[0-9]*: encrypted: .*' | tail -n1 > "$BK_DIR/encrypted.txt"
	fi
	rswap_down "$RSWAP_CFG"
}
backend_rswap_sync_setup() { RSWAP_BK_SYNC=1 RSWAP_BK_PARAMS= backend_rswap_setup; }
backend_rswap_sync_teardown() { backend_rswap_teardown; }
backend_rswap_enc_setup() { RSWAP_BK_ENCRYPT=1 RSWAP_BK_PARAMS= backend_rswap_setup; }
backend_rswap_enc_teardown() { backend_rswap_teardown; }
backend_rswap_enc_wq_setup() {
	RSWAP_BK_ENCRYPT=1 RSWAP_BK_PARAMS=crypt_workqueue=1 backend_rswap_setup
}
backend_rswap_enc_wq_teardown() { backend_rswap_teardown; }
# rswap-uring and rswap-poll (fio jobs only: swap never submits polled I/O). rswap-uring is
# rswap's target under fio's io_uring engine instead of libaio, completions still by
# interrupt: against rswap, what the engine alone changes. rswap-poll adds poll queues,
# one per client vCPU after the interrupt-driven ones (so that every CPU maps to one), and
# runs fio with io_uring and --hipri (IORING_SETUP_IOPOLL): its requests go to the poll
# queues, whose RDMA completions the polling task runs. Against rswap-uring, what polling
# changes; I/O that is not polled (the libaio fill) still uses the other queues.
uring_allow() { # io_uring_disabled=2 refuses io_uring even to root; the guests are ours
	local f=/proc/sys/kernel/io_uring_disabled
	[ "$(cat $f 2>/dev/null || echo 0)" != 2 ] || echo 0 > $f \
		|| { BK_REASON="io_uring is disabled (kernel.io_uring_disabled=2) and could not be enabled"; return 1; }
}
backend_rswap_uring_setup() {
	uring_allow && backend_rswap_setup || return 1
	BK_FIO=(--ioengine=io_uring)
}
backend_rswap_uring_teardown() { backend_rswap_teardown; }
backend_rswap_poll_setup() {
	local iop
	uring_allow && RSWAP_BK_POLLQ=$(nproc) backend_rswap_setup || return 1
	iop=$(cat "/sys/block/${BK_DEV#/dev/}/queue/io_poll" 2>/dev/null)
	[ "$iop" = 1 ] || {
		BK_REASON="enabled with poll_queues=$(nproc), but /sys/block/${BK_DEV#/dev/}/queue/io_poll is ${iop:-missing}, not 1"
		return 1; }
	BK_FIO=(--ioengine=io_uring --hipri=1)
}
backend_rswap_poll_teardown() { backend_rswap_teardown; }
# ----------------------------------------------------------------------------------------

# ---- rswap-4+2 and rswap-2+1: one rswap disk over k + r servers --------------------------
# rswap's own redundancy (Documentation/configuration.md, "A disk over several servers"):
# one target of code 4+2 over six rswap-servers (each page cut into four 1 KiB data
# fragments, P and Q: any two servers may be lost) or 2+1 over three (two 2 KiB fragments
# and P: any one), each server holding a region of a k-th of the disk: 1.5x the swap in
# remote memory where rswap-md1 takes 2x. extra_reads is left at its default 1 (a read
# also asks one parity fragment and ends with the first k back). The servers run on the
# one memory-server guest (ports $RSWAP_SERVER_PORT up) over the one link, as rswap-md1's
# two do; no failure is injected.
backend_rswap_ec42_setup() { RSWAP_BK_CODE=4+2 RSWAP_BK_PARAMS= backend_rswap_setup; }
backend_rswap_ec42_teardown() { backend_rswap_teardown; }
backend_rswap_ec21_setup() { RSWAP_BK_CODE=2+1 RSWAP_BK_PARAMS= backend_rswap_setup; }
backend_rswap_ec21_teardown() { backend_rswap_teardown; }
# rswap-4+2-d0: rswap-4+2 with extra_reads=0, its fio jobs only: a read asks the four legs
# of the data fragments and nothing more, what late binding (extra_reads 1) adds to it.
backend_rswap_ec42_d0_setup() {
	RSWAP_BK_CODE=4+2 RSWAP_BK_EXTRA=0 RSWAP_BK_PARAMS= backend_rswap_setup
}
backend_rswap_ec42_d0_teardown() { backend_rswap_teardown; }
# ----------------------------------------------------------------------------------------

# ---- rswap-md1: md RAID1 over two rswap disks --------------------------------------------
# Two rswap-servers on the memory-server guest (ports $RSWAP_SERVER_PORT and
# $RSWAP_SERVER_PORT2), one rswap target on each, and the kernel's md RAID1 with an internal
# write-intent bitmap over the two disks: every swapped-out page is written to both. Both
# servers share the one memory-server guest and the one link, so this measures what
# mirroring costs the swap workload, not what two independent servers would give. The
# set-up is that of Documentation/configuration.md, "Mirrored swap"; no failure is injected.
# Reports "not available" like rswap, and when mdadm or the raid1 module is missing.
RSWAP_MD_CFGS=(/sys/kernel/config/rswap/bench-md-a /sys/kernel/config/rswap/bench-md-b)
RSWAP_MD_PORTS=("$RSWAP_SERVER_PORT" "$RSWAP_SERVER_PORT2")
RSWAP_MD_DEV=/dev/md0
backend_rswap_md_setup() {
	local out i c members=() size
	# Each member holds md's 1.2 superblock, the internal bitmap and mdadm's data offset in
	# front of the data: give it 16 MiB more than the array needs (and each server a pool
	# 16 MiB larger again, as srv_rswap_server_start does for every size).
	size=$((DEV_MB + 16))
	command -v mdadm >/dev/null \
		|| { BK_REASON="not available: no mdadm in the guest (scripts/guest-image.sh)"; return 1; }
	out=$(modprobe raid1 2>&1) \
		|| { BK_REASON="not available: modprobe raid1 failed: $(echo "$out" | tail -1)"; return 1; }
	rswap_servers "$size" "${RSWAP_MD_PORTS[@]}" && rswap_insmod || return 1
	for i in 0 1; do
		c=${RSWAP_MD_CFGS[$i]}
		mkdir -p "$c" || { BK_REASON="no rswap configfs directory $c"; return 1; }
		echo "$PEER" > "$c/addr" && echo "${RSWAP_MD_PORTS[$i]}" > "$c/port" \
			&& echo "${size}M" > "$c/size" \
			|| { BK_REASON="configuring $c failed: $(dmesg | grep rswap | tail -1)"; return 1; }
		rswap_enable "$c" || return 1
		members+=("$RSWAP_DEV")
	done
	# A new rswap region is zero-filled (Documentation/memory-server.md), so the two
	# members are already identical and --assume-clean skips an initial resync that would
	# only copy zeros. The explicit --bitmap also keeps mdadm from asking about one.
	if ! out=$(timeout 120 mdadm --create "$RSWAP_MD_DEV" --run --level=1 --raid-devices=2 \
			--metadata=1.2 --bitmap=internal --assume-clean "${members[@]}" < /dev/null 2>&1); then
		BK_REASON="mdadm --create $RSWAP_MD_DEV over ${members[*]} failed: $(echo "$out" | tail -1)"; return 1
	fi
	wait_bdev "$RSWAP_MD_DEV" 30 || { BK_REASON="mdadm created the array, but no $RSWAP_MD_DEV appeared"; return 1; }
	{ echo "$out"; mdadm --detail "$RSWAP_MD_DEV"; cat /proc/mdstat; } > "$BK_DIR/md-setup.txt" 2>&1
	BK_DEV=$RSWAP_MD_DEV
}
backend_rswap_md_teardown() {
	local c md=/sys/block/${RSWAP_MD_DEV#/dev/}
	if [ -e "$md/md" ]; then
		# What went to each member (/sys/block/X/stat): md RAID1 writes every page to both.
		{ cat /proc/mdstat; for c in "$md"/slaves/*; do
			[ -e "$c" ] && echo "$(basename "$c") stat: $(cat "$c/stat")"; done
		} > "$BK_DIR/md-end.txt" 2>&1
		timeout 60 mdadm --stop "$RSWAP_MD_DEV" >> "$BK_DIR/md-end.txt" 2>&1
	fi
	rswap_down "${RSWAP_MD_CFGS[@]}"
}
# ----------------------------------------------------------------------------------------

backend_nvme_rdma_setup() {
	local out hostnqn c
	if ! out=$(ctl run nvmet_setup "$PEER" "$DEV_MB" 2>&1); then
		BK_REASON="nvmet target setup on $PEER failed: $(echo "$out" | tail -1)"; return 1
	fi
	modprobe nvme-rdma || { BK_REASON="modprobe nvme-rdma failed"; return 1; }
	hostnqn=nqn.2014-08.org.nvmexpress:uuid:$(cat /proc/sys/kernel/random/uuid)
	if ! out=$(timeout 60 nvme connect -t rdma -a "$PEER" -s "$NVMET_PORT" -n "$NVMET_NQN" \
			--hostnqn="$hostnqn" 2>&1); then
		BK_REASON="nvme connect -t rdma to $PEER failed: $(echo "$out" | tail -1)"; return 1
	fi
	for _ in $(seq 100); do
		for c in /sys/class/nvme/nvme*; do
			[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$NVMET_NQN" ] || continue
			if [ -b "/dev/$(basename "$c")n1" ]; then BK_DEV=/dev/$(basename "$c")n1; return 0; fi
		done
		sleep 0.2
	done
	BK_REASON="nvme connect succeeded but no namespace block device appeared"; return 1
}
backend_nvme_rdma_teardown() {
	timeout 60 nvme disconnect -n "$NVMET_NQN" >/dev/null 2>&1
	ctl run nvmet_teardown >/dev/null 2>&1
	true
}

backend_local_setup() {
	local out
	out=$(brd_load "$DEV_MB") || { BK_REASON=$out; return 1; }
	BK_DEV=$BRD_LOCAL_DEV
}
backend_local_teardown() { :; }

# ---- the backends of `make bench-apps` only (APP_BACKENDS) ---------------------------------
# zram: a compressed RAM disk on the client guest, DEV_MB large, with the given algorithm.
# Its memory (zsmalloc) is the kernel's, not charged to the application's cgroup: the
# figures of apps-client.sh record its peak (mm_stat mem_used_max) for each run.
backend_zram_setup() { # ALGO
	local out
	[ -e /sys/module/zram ] || modprobe zram || { BK_REASON="not available: modprobe zram failed"; return 1; }
	out=$(zramctl --find --size "${DEV_MB}M" --algorithm "$1" 2>&1) \
		|| { BK_REASON="zramctl --find --algorithm $1 failed: $(echo "$out" | tail -1)"; return 1; }
	wait_bdev "$out" 10 || { BK_REASON="zramctl gave $out, which is not a block device"; return 1; }
	echo "$out: $(cat "/sys/block/${out#/dev/}/comp_algorithm")" > "$BK_DIR/zram.txt"
	BK_DEV=$out
}
backend_zram_teardown() {
	[ -n "$BK_DEV" ] && [ -b "$BK_DEV" ] || return 0
	cat "/sys/block/${BK_DEV#/dev/}/mm_stat" >> "$BK_DIR/zram.txt" 2>/dev/null
	zramctl --reset "$BK_DEV" 2>/dev/null
	true
}
backend_zram_lz4_setup() { backend_zram_setup lz4; }
backend_zram_lz4_teardown() { backend_zram_teardown; }
backend_zram_zstd_setup() { backend_zram_setup zstd; }
backend_zram_zstd_teardown() { backend_zram_teardown; }

# virtio-disk: swap on the client guest's second virtio disk, a scratch file on the host
# (qemu/run.sh --scratch), the stand-in for a local SSD. The host's page cache holds it,
# so it is a fast SSD: no seek, no flash latency, only the virtio round trip.
VDISK_DEV=/dev/vdb
backend_vdisk_setup() {
	[ -b "$VDISK_DEV" ] || { BK_REASON="not available: no scratch virtio disk $VDISK_DEV (qemu/run.sh --scratch MB)"; return 1; }
	[ "$(($(cat /sys/block/vdb/size) / 2048))" -ge "$DEV_MB" ] \
		|| { BK_REASON="$VDISK_DEV has $(($(cat /sys/block/vdb/size) / 2048)) MiB, not $DEV_MB"; return 1; }
	BK_DEV=$VDISK_DEV
}
backend_vdisk_teardown() { :; }

# zswap-rswap: zswap in front of rswap. BK_ZSWAP names the compressor: apps-client.sh turns
# zswap on with it for each run on this backend (off for every other one). The shrinker
# writes the coldest compressed pages back to /dev/rswap0 under memory pressure, so what
# reaches the remote memory is what zswap could not keep.
backend_zswap_rswap_setup() {
	[ -w /sys/module/zswap/parameters/enabled ] \
		|| { BK_REASON="not available: this kernel has no zswap"; return 1; }
	modprobe -q lz4 2>/dev/null
	backend_rswap_setup || return 1
	BK_ZSWAP=lz4
}
backend_zswap_rswap_teardown() {
	[ -w /sys/module/zswap/parameters/enabled ] && echo N > /sys/module/zswap/parameters/enabled
	backend_rswap_teardown
}
