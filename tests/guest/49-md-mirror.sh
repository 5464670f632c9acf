#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Mirrored swap over two memory servers with the kernel's own md RAID1 (soft-RoCE, one
# guest): /dev/md0 mirrors /dev/rswap0 (server A) and /dev/rswap1 (server B), with a
# write-intent bitmap, and is swapped on. Server A is SIGKILLed for good under the swap
# load: its leg fails within recovery_ms + keep-alive + 2 s, md marks it faulty and goes
# on with B; the workload ends with every page intact. Then A comes back on its state
# directory: the leg is re-added and resynced through the bitmap, and the data written
# while it was away reads back from it alone.
. "$RSWAP_TOP/tests/lib/guest.sh"

KO=$RSWAP_TOP/rswap.ko
SRV=$RSWAP_TOP/tools/rswap-server/target/release/rswap-server
LOAD=${RSWAP_SWAPLOAD:-$RSWAP_OUT/swapload}
IP=${RSWAP_GUEST_IP:-192.0.2.1}
PA=18541 PB=18542
CFG=/sys/kernel/config/rswap
TA=$CFG/mirror-a TB=$CFG/mirror-b
CG=/sys/fs/cgroup/rswap-mirror
OUT=$RSWAP_OUT/49-md-mirror
SDA=/tmp/rswap-49-a SDB=/tmp/rswap-49-b
REGION_MB=112 SWAP_MB=80 TAIL_MB=8 WORK_MB=48 LIMIT_MB=16
RECOVERY_MS=3000 KEEPALIVE_MS=1000
mkdir -p "$OUT"

SA= SB= MOUNTS=
cleanup() {
	swapoff /dev/md0 2>/dev/null
	mdadm --stop /dev/md0 >/dev/null 2>&1
	for t in $TA $TB; do
		{ [ -d "$t" ] && echo 0 > "$t/enable"; } 2>/dev/null
		rmdir "$t" 2>/dev/null
	done
	for p in $SA $SB; do kill -KILL "$p" 2>/dev/null; done
	rmdir $CG 2>/dev/null
	for m in $MOUNTS; do umount "$m" 2>/dev/null; done
	true
}
trap cleanup EXIT

setup() {
	[ -f "$KO" ] || ktap_skip_rest "rswap.ko not built"
	[ -x "$SRV" ] || ktap_skip_rest "rswap-server not built (scripts/build-server.sh)"
	[ -x "$LOAD" ] || ktap_skip_rest "no swapload binary at $LOAD"
	command -v mdadm >/dev/null || ktap_skip_rest "no mdadm in the guest image"
	modprobe raid1 2>/dev/null || ktap_skip_rest "no raid1 module"
	rdma_up >/dev/null || ktap_skip_rest "$RDMA_DEV unavailable"
	dmesg_mark "49-md-mirror"

	for d in $SDA $SDB; do
		mkdir -p $d && mount -t tmpfs -o size=$((REGION_MB + 32))M,mode=0700 rswap-49 $d && MOUNTS="$MOUNTS $d"
	done
	# start_a / start_b: each server on its own port and state directory.
	start_a() { server_start "$OUT/server-a.log" --listen "$IP:$PA" --size $((REGION_MB + 16))M --grace 120 --state-dir $SDA --insecure && SA=$SPID; }
	start_b() { server_start "$OUT/server-b.log" --listen "$IP:$PB" --size $((REGION_MB + 16))M --grace 120 --state-dir $SDB --insecure && SB=$SPID; }
	start_a >/dev/null && start_b >/dev/null || ktap_skip_rest "rswap-server does not start"
	grep -q '^rswap ' /proc/modules || rswap_load || ktap_skip_rest "insmod failed"
	swapoff -a 2>/dev/null
	# target DIR PORT CLIENT_ID: configures and enables one leg.
}

target() {
	mkdir -p $1
	echo "$IP" > $1/addr; echo $2 > $1/port; echo ${REGION_MB}M > $1/size; echo 2 > $1/queues
	echo $3 > $1/client_id; echo $RECOVERY_MS > $1/recovery_ms; echo $KEEPALIVE_MS > $1/keepalive_ms
	echo 1 > $1/enable
}
md_state() { cat /sys/block/md0/md/dev-$1/state 2>/dev/null; }

# Two fresh regions are zeroes: nothing to sync at creation. The swap area leaves a
# tail of the array for data written straight to it.
t_mirror() {
	ok=0
	if target $TA $PA 0x4901 && target $TB $PB 0x4902; then
		A=$(cat $TA/device) B=$(cat $TB/device)
		mdadm --create /dev/md0 --run --level=1 --raid-devices=2 --metadata=1.2 --bitmap=internal \
			--assume-clean /dev/$A /dev/$B >"$OUT/mdadm-create.log" 2>&1 \
			&& mkswap /dev/md0 $((SWAP_MB * 1024)) >/dev/null && ok=1
		# The tail (not swap: a swapped-on device takes no other writes) gets known data.
		head -c ${TAIL_MB}M /dev/urandom > /tmp/tail0
		dd if=/tmp/tail0 of=/dev/md0 bs=1M seek=$SWAP_MB oflag=direct status=none || ok=0
		swapon -p 100 /dev/md0 || ok=0
	fi
	if [ $ok = 1 ]; then
		ktap_pass
		ktap_diag "$(grep -A2 '^md0' /proc/mdstat | tr -s ' \n' ' ')"
	else
		ktap_fail "$(cat "$OUT/mdadm-create.log"; dmesg | grep -E 'rswap|md' | tail -3)"
		ktap_skip_rest "no mirror"
	fi
}
ktap_test "mirror: md RAID1 with a write-intent bitmap over /dev/rswap0 (server A) and /dev/rswap1 (server B); swap on /dev/md0" t_mirror

# Under the swap load, server A dies and stays dead.
# Starts the swap load ($LPID) on the mirror of the test before, which t_workload waits
# for.
t_server_a_dies() {
	echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
	mkdir -p $CG
	echo $((LIMIT_MB << 20)) > $CG/memory.max
	echo max > $CG/memory.swap.max 2>/dev/null
	out0=$(vm pswpout)
	# One verify pass: the kill comes during the write phase, and the pass checks every
	# page after it (those swapped out come back from B alone).
	SWAPLOAD_PASSES=1 sh -c "echo \$\$ > $CG/cgroup.procs && exec $LOAD $WORK_MB 13" >"$OUT/swapload.json" 2>"$OUT/swapload.err" &
	LPID=$!
	swapping=$(wait_swapping $LPID $out0)
	kill -KILL $SA; killed=$(date +%s%N); wait $SA 2>/dev/null; SA=
	for _ in $(seq 300); do
		[[ $(md_state $A) == *faulty* ]] && break
		sleep 0.1
	done
	ms=$(( ($(date +%s%N) - killed) / 1000000 ))
	limit=$((RECOVERY_MS + KEEPALIVE_MS + 2000))
	if [ "$swapping" -ge 2000 ] && [[ $(md_state $A) == *faulty* ]] && [ $ms -le $limit ]; then
		ktap_pass
		ktap_diag "killed after $swapping pages out; $A faulty after ${ms} ms (limit ${limit}): $(grep -A1 '^md0' /proc/mdstat | tr -s ' \n' ' ')"
	else
		ktap_fail "pages out $swapping; $A state '$(md_state $A)' after ${ms} ms (limit ${limit}); $(dmesg | grep -E 'rswap|md/raid1' | tail -4)"
	fi
}
ktap_test "mirror: server A is SIGKILLed for good under the swap load; md marks its leg faulty within recovery_ms + keep-alive + 2 s" t_server_a_dies

# The swap load of the test before, with server A gone.
t_workload() {
	timeout 900 tail --pid=$LPID -f /dev/null
	wait $LPID; lrc=$?
	since_mark() { dmesg | sed -n '/rswap-test-mark: 49-md-mirror/,$p'; }
	if [ $lrc = 0 ] && grep -q '"bad_pages": *0' "$OUT/swapload.json" && ! since_mark | grep -q 'Killed process'; then
		ktap_pass
		ktap_diag "swapload (degraded after the kill): $(cat "$OUT/swapload.json")"
	else
		ktap_fail "exit $lrc: $(cat "$OUT/swapload.err" "$OUT/swapload.json" | tail -3); $(since_mark | grep -E 'Killed process|rswap' | tail -4)"
	fi
	rmdir $CG 2>/dev/null
}
ktap_test "mirror: the swap workload ends with 0 bad pages and no process killed" t_workload

# While A is away: swap is turned off (every page comes back from B alone), and part of
# the tail gets new data (only B gets it; the bitmap marks it).
t_readd() {
	ok=1
	swapoff /dev/md0 || ok=0
	head -c 2M /dev/urandom > /tmp/tail-new
	dd if=/tmp/tail-new of=/dev/md0 bs=1M seek=$((SWAP_MB + 3)) oflag=direct status=none || ok=0
	cp /tmp/tail0 /tmp/tail1
	dd if=/tmp/tail-new of=/tmp/tail1 bs=1M seek=3 conv=notrunc status=none
	# A comes back with its region (the state directory kept it): the leg's data is as of the
	# kill, its md superblock and bitmap too. Take the faulty leg out, reconnect it (disable
	# and enable: its queues are dead), re-add it: md copies only what the bitmap marks.
	start_a >/dev/null || ok=0
	mdadm /dev/md0 --remove /dev/$A >"$OUT/mdadm-readd.log" 2>&1 || ok=0
	echo 0 > $TA/enable && echo 1 > $TA/enable || ok=0
	A=$(cat $TA/device)
	start=$(date +%s%N)
	mdadm /dev/md0 --re-add /dev/$A >>"$OUT/mdadm-readd.log" 2>&1 || ok=0
	mdadm --wait /dev/md0 >/dev/null 2>&1
	resync_ms=$(( ($(date +%s%N) - start) / 1000000 ))
	degraded=$(cat /sys/block/md0/md/degraded 2>/dev/null)
	readded=$(grep -c 're-added' "$OUT/mdadm-readd.log")
	# Read the tail from A alone: fail B's leg for a moment.
	mdadm /dev/md0 --fail /dev/$B >>"$OUT/mdadm-readd.log" 2>&1 || ok=0
	same=no
	dd if=/dev/md0 bs=1M skip=$SWAP_MB count=$TAIL_MB iflag=direct status=none | cmp -s - /tmp/tail1 && same=yes
	mdadm /dev/md0 --remove /dev/$B >>"$OUT/mdadm-readd.log" 2>&1
	mdadm /dev/md0 --re-add /dev/$B >>"$OUT/mdadm-readd.log" 2>&1 || ok=0
	mdadm --wait /dev/md0 >/dev/null 2>&1
	if [ $ok = 1 ] && [ "$readded" -ge 1 ] && [ "$degraded" = 0 ] && [ $same = yes ] \
		&& grep -q '\[UU\]' /proc/mdstat && grep -q 'event=descriptor_posted client_id=18689 .*reused=1' "$OUT/server-a.log"; then
		ktap_pass
		ktap_diag "re-add and bitmap resync of $A: ${resync_ms} ms; $(grep 'region_restored' "$OUT/server-a.log" | tail -1 | sed 's/.*event=//')"
		ktap_diag "$(grep -A2 '^md0' /proc/mdstat | tr -s ' \n' ' ')"
	else
		ktap_fail "ok=$ok re-added=$readded degraded=$degraded tail same=$same; $(cat "$OUT/mdadm-readd.log" | tail -4); $(grep -A2 '^md0' /proc/mdstat | tr '\n' ' ')"
	fi
}
ktap_test "mirror: swapoff from the degraded array; A restarts on its state directory; its leg is re-added, resynced through the bitmap, and alone returns the data written while it was away" t_readd

t_teardown() {
	ok=1
	mdadm --stop /dev/md0 >/dev/null 2>&1 || ok=0
	for t in $TA $TB; do echo 0 > $t/enable || ok=0; rmdir $t || ok=0; done
	rmmod rswap || ok=0
	if [ $ok = 1 ]; then ktap_pass; else ktap_fail "$(cat /proc/swaps /proc/mdstat; dmesg | tail -5)"; fi
	for p in $SA $SB; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	SA= SB=
}
ktap_test "mirror: mdadm --stop, disable and rmmod work" t_teardown

ktap_test "dmesg: no BUG/WARNING/Oops in the mirror tests" dmesg_check_noting

ktap_run setup
