#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Confidential swap (soft-RoCE, one guest): with `encrypt` on, every block leaves the
# client sealed with AES-256-GCM and the client alone keeps each block's nonce and tag.
# The server keeps its region in a file (--state-dir), which stands for what its operator
# can read and change: a known plaintext written through /dev/rswap0 is nowhere in that
# file with encryption on (and is there with it off); a byte flipped, two blocks swapped
# or an old version replayed in the file turns the read into EIO, counted in the stats,
# never into wrong data; the swap workload runs with 0 bad pages; a server restart that
# kept the region changes nothing for the reader; and the same with reads opened in a
# workqueue (crypt_workqueue=1) rather than in the RDMA completion.
. "$RSWAP_TOP/tests/lib/guest.sh"

KO=$RSWAP_TOP/rswap.ko
SRV=$RSWAP_TOP/tools/rswap-server/target/release/rswap-server
LOAD=${RSWAP_SWAPLOAD:-$RSWAP_OUT/swapload}
IP=${RSWAP_GUEST_IP:-192.0.2.1}
PORT=18556
CFG=/sys/kernel/config/rswap
T=$CFG/crypt
CG=/sys/fs/cgroup/rswap-crypt
OUT=$RSWAP_OUT/56-encrypt
SD=/tmp/rswap-56-state
SIZE_MB=96
WORK_MB=48
LIMIT_MB=20
mkdir -p "$OUT"

SPID= MOUNTED=
cleanup() {
	swapoff /dev/rswap0 2>/dev/null
	target_cleanup
	rmdir $CG 2>/dev/null
	[ -z "$MOUNTED" ] || umount $SD 2>/dev/null
	# Test 12 loads rswap.ko with crypt_workqueue=1: no later suite should inherit that.
	rmmod rswap 2>/dev/null
	true
}
trap cleanup EXIT

# region: the server's memory file of the target's region (what its operator can read).
region() { printf '%s/region-%016x.mem' $SD "$(state_field $T region)"; }
# blk_get N FILE: block N (4 KiB) of FILE to stdout.
blk_get() { dd if="$2" bs=4096 skip="$1" count=1 status=none; }
# blk_put N FILE: stdin into block N of FILE, in place.
blk_put() { dd of="$2" bs=4096 seek="$1" count=1 conv=notrunc status=none; }
# dev_read N: block N of /dev/rswap0, bypassing the page cache; fails on an I/O error.
dev_read() { dd if=/dev/rswap0 bs=4096 skip="$1" count=1 iflag=direct status=none; }
# dev_write N: stdin into block N of /dev/rswap0, bypassing the page cache.
dev_write() { dd of=/dev/rswap0 bs=4096 seek="$1" count=1 oflag=direct status=none; }
# stat_of KEY: a field of the stats' encryption line.
stat_of() { sed -n "s/^encryption .*\b$1=\([0-9]*\).*/\1/p" $T/stats; }
# page_of TEXT: one 4 KiB block of TEXT repeated.
page_of() { yes "$1" | head -c 4096; }
# flip FILE OFFSET: flips the lowest bit of one byte of FILE.
flip() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "\\$(printf %03o $((b ^ 1)))" | dd of="$1" bs=1 seek="$2" count=1 conv=notrunc status=none
}
# setup ENCRYPT [MIB]: the target enabled with encrypt=ENCRYPT (disabled first), of
# SIZE_MB unless given.
setup() {
	{ [ -d $T ] && echo 0 > $T/enable; } 2>/dev/null
	[ -d $T ] || mkdir $T
	echo "$IP" > $T/addr; echo $PORT > $T/port; echo "${2:-$SIZE_MB}M" > $T/size; echo 2 > $T/queues
	echo "$1" > $T/encrypt && echo 1 > $T/enable
}

suite_setup() {
	[ -f "$KO" ] || ktap_skip_rest "rswap.ko not built"
	[ -x "$SRV" ] || ktap_skip_rest "rswap-server not built (scripts/build-server.sh)"
	rdma_up >/dev/null || ktap_skip_rest "$RDMA_DEV unavailable"
	dmesg_mark "56-encrypt"

	mkdir -p $SD
	mount -t tmpfs -o size=$((SIZE_MB + 64))M,mode=0700 rswap-56 $SD && MOUNTED=1
	start_server() {
		server_start "$OUT/server.log" --listen "$IP:$PORT" --size $((SIZE_MB + 32))M --grace 60 \
			--state-dir $SD --insecure
	}
	start_server || ktap_skip_rest "rswap-server --state-dir does not start: $(tail -3 "$OUT/server.log")"
	grep -q '^rswap ' /proc/modules || rswap_load || ktap_skip_rest "insmod failed"
	# The kernel's fastest gcm(aes) on x86, which udev loads at boot on a CPU with AES-NI (this
	# guest has no udev); without it the crypto API picks the library one (gcm-aes-lib).
	modprobe -q aesni_intel 2>/dev/null

	# A known plaintext of 1 MiB, unique to this run.
	MARK="rswap-confidential-$(cat /proc/sys/kernel/random/uuid)"
	yes "$MARK" | head -c $((1 << 20)) > "$OUT/plain"
}

# the attribute
t_attribute() {
	mkdir $T
	def=$(cat $T/encrypt)
	bad=0; (echo maybe > $T/encrypt) 2>/dev/null && bad=1
	why=$(cat $T/last_error)
	echo "$IP" > $T/addr; echo $PORT > $T/port; echo ${SIZE_MB}M > $T/size; echo 2 > $T/queues
	busy=0
	if echo 1 > $T/encrypt && echo 1 > $T/enable; then
		(echo 0 > $T/encrypt) 2>/dev/null || busy=1
		echo 0 > $T/enable
	fi
	if [ "$def" = 0 ] && [ $bad = 0 ] && [[ $why == encrypt:* ]] && [ $busy = 1 ]; then
		ktap_pass
		ktap_diag "refused: $why"
	else
		ktap_fail "default '$def', bad accepted=$bad ($why), read-only while enabled=$busy"
	fi
}
ktap_test "encrypt: off by default; a bad value is refused with a reason; read-only while enabled" t_attribute

# encrypted round trip
t_round_trip() {
	if setup 1 && dd if="$OUT/plain" of=/dev/rswap0 bs=64k oflag=direct status=none \
		&& dd if=/dev/rswap0 of="$OUT/back" bs=64k count=16 iflag=direct status=none \
		&& cmp -s "$OUT/plain" "$OUT/back" \
		&& dmesg | grep -q 'rswap[0-9]*: encrypted: AES-256-GCM'; then
		ktap_pass
		ktap_diag "$(dmesg | grep -o 'rswap[0-9]*: encrypted: .*' | tail -1)"
		ktap_diag "$(grep '^encryption' $T/stats)"
	else
		ktap_fail "$(cat $T/last_error; dmesg | grep rswap | tail -3)"
		ktap_skip_rest "no encrypted disk"
	fi
}
ktap_test "encrypt=1: the disk says it is encrypted; data written through /dev/rswap0 reads back identical" t_round_trip

# not in the server's memory; and no nonce used twice (GCM's ciphertext does not
# depend on the block number: only a fresh nonce makes two sealings of one page differ)
t_not_in_server() {
	R=$(region)
	page_of "same-page" | dev_write 300; page_of "same-page" | dev_write 301
	c300=$(blk_get 300 "$R" | md5sum); c301=$(blk_get 301 "$R" | md5sum)
	page_of "same-page" | dev_write 300
	c300b=$(blk_get 300 "$R" | md5sum)
	plain=$(page_of "same-page" | md5sum)
	if [ -s "$R" ] && ! grep -qaF "$MARK" "$R" && [ "$(stat_of sealed)" -ge 256 ] \
		&& [ "$c300" != "$c301" ] && [ "$c300" != "$c300b" ] && [ "$c301" != "$c300b" ] \
		&& [ "$c300" != "$plain" ]; then
		ktap_pass
		ktap_diag "$(basename "$R"): $(stat -c %s "$R") bytes, no '$MARK'; $(grep '^encryption' $T/stats)"
	else
		ktap_fail "region '$R' ($(stat -c %s "$R" 2>&1)): $(grep -caF "$MARK" "$R" 2>&1) matching lines; ciphertexts ${c300%% *} ${c301%% *} ${c300b%% *}"
	fi
}
ktap_test "encrypt=1: the known plaintext is nowhere in the server's region; one page written to two blocks, or twice to one, is never the same ciphertext" t_not_in_server

# in the server's memory without encryption (the check of the test before can see plaintext)
t_plain_in_server() {
	hits=
	if setup 0 && dd if="$OUT/plain" of=/dev/rswap0 bs=64k oflag=direct status=none; then
		hits=$(grep -caF "$MARK" "$(region)")
	fi
	if [ "${hits:-0}" -gt 0 ] && grep -q '^encryption off' $T/stats; then
		ktap_pass
		ktap_diag "$hits lines of the plaintext in $(basename "$(region)")"
	else
		ktap_fail "hits '$hits'; $(cat $T/last_error)"
	fi
}
ktap_test "encrypt=0: the same plaintext is in the server's region (the test can see it)" t_plain_in_server

# Encrypted again (a new key: what the unencrypted target wrote does not verify). Blocks
# 0 to 7 written here, and the region's file $R, are what the next tests tamper with.
t_flipped_byte() {
	setup 1 || ktap_skip_rest "encrypt=1 does not enable again: $(cat $T/last_error)"
	R=$(region)
	for n in 0 1 2 3 4 5 6 7; do page_of "block-$n-v1" | dev_write $n; done
	page_of "block-3-v2" | dev_write 3

	# a flipped byte
	f0=$(stat_of auth_failures); e0=$(sed -n 's/^total .*errors=\([0-9]*\).*/\1/p' $T/stats)
	flip "$R" $((1 * 4096 + 100))
	got=$(dev_read 1 2>"$OUT/read1.err"); rc=$?
	f1=$(stat_of auth_failures); e1=$(sed -n 's/^total .*errors=\([0-9]*\).*/\1/p' $T/stats)
	if [ $rc != 0 ] && grep -qi 'input/output error' "$OUT/read1.err" && [ "$f1" = $((f0 + 1)) ] \
		&& [ "$e1" -gt "$e0" ] && [[ $got != *block-1* ]] && dev_read 0 | grep -q 'block-0-v1' \
		&& dmesg | grep -q 'does not verify'; then
		ktap_pass
		ktap_diag "$(cat "$OUT/read1.err"); auth_failures $f0 -> $f1"
		ktap_diag "$(dmesg | grep -o 'rswap[0-9]*: queue .*does not verify.*' | tail -1)"
	else
		ktap_fail "rc $rc, auth_failures $f0 -> $f1, errors $e0 -> $e1, got '${got:0:40}'"
	fi
}
ktap_test "a byte flipped by the server: that read fails with EIO, is counted, and returns no data" t_flipped_byte

# two blocks swapped
t_swapped_blocks() {
	blk_get 4 "$R" > "$OUT/b4"; blk_get 5 "$R" > "$OUT/b5"
	blk_put 4 "$R" < "$OUT/b5"; blk_put 5 "$R" < "$OUT/b4"
	r4=0; dev_read 4 >/dev/null 2>&1 || r4=1
	r5=0; dev_read 5 >/dev/null 2>&1 || r5=1
	f2=$(stat_of auth_failures)
	if [ $r4 = 1 ] && [ $r5 = 1 ] && [ "$f2" = $((f1 + 2)) ] && ! cmp -s "$OUT/b4" "$OUT/b5"; then
		ktap_pass
	else
		ktap_fail "block 4 failed=$r4, block 5 failed=$r5, auth_failures $f1 -> $f2"
	fi
}
ktap_test "two blocks swapped by the server: both reads fail with EIO" t_swapped_blocks

# an old version replayed: block 6's v1 ciphertext is put back after v2 was written
t_replayed_block() {
	blk_get 6 "$R" > "$OUT/b6-v1"
	page_of "block-6-v2" | dev_write 6
	v2ok=0; dev_read 6 | grep -q 'block-6-v2' && v2ok=1
	blk_put 6 "$R" < "$OUT/b6-v1"
	r6=0; dev_read 6 >/dev/null 2>&1 || r6=1
	f3=$(stat_of auth_failures)
	if [ $v2ok = 1 ] && [ $r6 = 1 ] && [ "$f3" = $((f2 + 1)) ]; then
		ktap_pass
	else
		ktap_fail "v2 read back=$v2ok, replayed v1 failed=$r6, auth_failures $f2 -> $f3"
	fi
}
ktap_test "an old version of a block replayed by the server: the read fails with EIO" t_replayed_block

# rewrite heals; never-written blocks are zeros even if the server writes there
t_rewrite_heals() {
	page_of "block-1-v3" | dev_write 1
	healed=0; dev_read 1 | grep -q 'block-1-v3' && healed=1
	page_of "server-garbage" | blk_put 100 "$R"
	zeros=0; [ "$(dev_read 100 | tr -d '\0' | wc -c)" = 0 ] && zeros=1
	same=0; dev_read 3 | grep -q 'block-3-v2' && dev_read 7 | grep -q 'block-7-v1' && same=1
	if [ $healed = 1 ] && [ $zeros = 1 ] && [ $same = 1 ]; then
		ktap_pass
	else
		ktap_fail "rewritten block read back=$healed, unwritten block zeros=$zeros, others intact=$same"
	fi
}
ktap_test "a block written again after tampering reads back; a never-written block reads zeros whatever the server holds" t_rewrite_heals

# the server is killed while an encrypted write runs and restarted on its state
# directory: the key and the seals are the client's; requests that failed under the kill
# are sealed again (fresh nonces) when they are issued again
t_server_restart() {
	rec0=$(state_field $T recoveries)
	dd if="$OUT/plain" of=/dev/rswap0 bs=4k seek=1024 oflag=direct status=none 2>"$OUT/dd9.err" &
	DD=$!
	sleep 0.3
	kill -KILL "$SPID"; wait "$SPID" 2>/dev/null; SPID=
	sleep 1
	start_server >/dev/null || ktap_diag "restart failed: $(tail -3 "$OUT/server.log")"
	wait_exit $DD 180; ddrc=$?
	for _ in $(seq 300); do [ "$(state_field $T recoveries)" -gt "$rec0" ] 2>/dev/null && break; sleep 0.1; done
	if [ $ddrc = 0 ] && timeout 120 dd if=/dev/rswap0 of="$OUT/back2" bs=64k skip=64 count=16 iflag=direct status=none \
		&& cmp -s "$OUT/plain" "$OUT/back2" && [ -s "$(region)" ] \
		&& ! dd if="$(region)" bs=64k skip=64 count=16 status=none | grep -qaF "$MARK"; then
		ktap_pass
		ktap_diag "$(cat $T/state)"
	else
		ktap_fail "dd exit $ddrc $(cat "$OUT/dd9.err"); $(cat $T/state; dmesg | grep rswap | tail -3)"
	fi
}
ktap_test "the server killed under an encrypted write and restarted on its state directory: the write is sealed again, completes, and reads back" t_server_restart

# concurrent writes of one block from two queues must leave a seal that matches what
# the server holds (a write claims its blocks until it ends), and reads racing them must
# neither fail nor count as forged (the blocks tampered with above are written first)
t_racing_writes() {
	dd if=/dev/zero of=/dev/rswap0 bs=64k count=16 oflag=direct status=none
	f0=$(stat_of auth_failures)
	fio_race() { # RW: 2 jobs at QD16 over the first 1 MiB (256 blocks: they collide often)
		timeout 120 fio --name=race --filename=/dev/rswap0 --direct=1 --ioengine=libaio --rw="$1" \
			--bs=4k --size=1M --iodepth=16 --numjobs=2 --time_based --runtime=4 \
			--norandommap --randrepeat=0 --group_reporting --output-format=terse \
			>>"$OUT/fio-race.txt" 2>&1
	}
	fio_race randwrite; w=$?
	fio_race randrw; rw=$?
	rd=0; dd if=/dev/rswap0 of=/dev/null bs=64k count=16 iflag=direct status=none 2>"$OUT/race-read.err" || rd=1
	f1=$(stat_of auth_failures)
	if [ $w = 0 ] && [ $rw = 0 ] && [ $rd = 0 ] && [ "$f1" = "$f0" ]; then
		ktap_pass
		ktap_diag "$(grep '^encryption' $T/stats)"
	else
		ktap_fail "fio randwrite exit $w, randrw exit $rw, read of all blocks failed=$rd ($(cat "$OUT/race-read.err")), auth_failures $f0 -> $f1; $(dmesg | grep rswap | tail -3)"
	fi
}
ktap_test "writes and reads racing for the same blocks on both queues (fio, 2 jobs, QD16, 1 MiB): no I/O error, no false forgery, every block reads afterwards" t_racing_writes

# swap with encryption
t_swap() {
	if [ ! -x "$LOAD" ]; then
		ktap_skip "no swapload binary at $LOAD"
	else
		swapoff -a 2>/dev/null
		echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
		mkdir -p $CG
		echo $((LIMIT_MB << 20)) > $CG/memory.max
		echo max > $CG/memory.swap.max 2>/dev/null
		# The blocks tampered with above are written again, so that nothing (udev probing the
		# new swap signature) trips over them.
		dd if=/dev/zero of=/dev/rswap0 bs=64k count=16 oflag=direct status=none
		f0=$(stat_of auth_failures)
		if mkswap /dev/rswap0 >/dev/null && swapon -p 100 /dev/rswap0; then
			start=$(date +%s)
			# One verify pass: it checks every page once, each swapped-out one read back and
			# opened (decrypted, its tag checked).
			SWAPLOAD_PASSES=1 timeout 900 sh -c "echo \$\$ > $CG/cgroup.procs && exec $LOAD $WORK_MB 13" \
				>"$OUT/swapload.json" 2>"$OUT/swapload.err"
			lrc=$?
			took=$(( $(date +%s) - start ))
			opened=$(stat_of opened)
			swapoff /dev/rswap0
			if [ $lrc = 0 ] && grep -q '"bad_pages": *0' "$OUT/swapload.json" \
				&& [ "$(stat_of auth_failures)" = "$f0" ] && [ "$opened" -gt 1000 ]; then
				ktap_pass
				ktap_diag "swapload ${took}s: $(cat "$OUT/swapload.json")"
				ktap_diag "$(grep '^encryption' $T/stats)"
			else
				ktap_fail "exit $lrc: $(cat "$OUT/swapload.err" "$OUT/swapload.json"; grep '^encryption' $T/stats)"
			fi
		else
			ktap_fail "mkswap/swapon failed"
		fi
	fi
}
ktap_test "swap on an encrypted disk: the swap workload ends with 0 bad pages" t_swap

# the same in a workqueue instead of the completion (rswap.ko crypt_workqueue=1); a new
# directory is a new client id, whose region must fit beside the old one (kept for --grace)
t_crypt_workqueue() {
	echo 0 > $T/enable; rmdir $T
	wq=0
	if rmmod rswap && rswap_load crypt_workqueue=1 && setup 1 16 \
		&& dmesg | grep -q 'encrypted: .*reads opened in a workqueue'; then
		wq=1
	fi
	ok=0; fail=0
	if [ $wq = 1 ] && dd if="$OUT/plain" of=/dev/rswap0 bs=64k oflag=direct status=none \
		&& dd if=/dev/rswap0 of="$OUT/back3" bs=64k count=16 iflag=direct status=none \
		&& cmp -s "$OUT/plain" "$OUT/back3"; then
		ok=1
		flip "$(region)" $((2 * 4096 + 7))
		dev_read 2 >/dev/null 2>&1 || fail=1
	fi
	if [ $ok = 1 ] && [ $fail = 1 ] && [ "$(stat_of auth_failures)" = 1 ]; then
		ktap_pass
		ktap_diag "$(grep '^encryption' $T/stats)"
	else
		ktap_fail "module reloaded with the workqueue=$wq, read back=$ok, flipped byte failed=$fail; $(grep '^encryption' $T/stats 2>&1)"
	fi
}
ktap_test "crypt_workqueue=1: reads are opened in a workqueue; data reads back, a flipped byte fails with EIO" t_crypt_workqueue

t_dmesg() {
	echo 0 > $T/enable
	ktap_check dmesg_clean
}
ktap_test "dmesg: no BUG/WARNING/Oops in the encryption tests" t_dmesg

ktap_run suite_setup
