#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# One disk over several memory servers (code K+R, soft-RoCE, one guest, six rswap-server
# processes): striping (4+0), mirroring (1+1), replication (1+2), one parity fragment
# (2+1) and two (4+2, the kernel's RAID-6 library). Each enables a target over the
# servers, checks its state (a line per server), writes and verifies with fio, and reads
# the servers' region files (--state-dir) to see every fragment where the placement rule
# puts it: fragment j of block b on server (j + b / 8) mod (k + r), at byte b * 4096 / k
# of its region; with replication every server holds every block; P (fragment k) is the
# XOR of the data fragments. Then servers are SIGKILLed, up to r of them: reads go on
# around each at once (rebuilt from the others), once its queues are dead its leg is out
# of the disk, and writes and fio verify go on without it; one more (beyond what the code
# survives) and I/O fails with EIO, never returning wrong data. Swap on 4+2 loses two
# servers under its load with every page intact. A server restarted with its state gets
# only the groups it missed rebuilt; a lost one is replaced by an empty server (replace)
# and rebuilt, alone and under the swap load. With encrypt=1 (4+2) every block is sealed
# before it is cut: fio verifies, no leg's region holds the plaintext, a replaced server
# is rebuilt the same way, and a server that flips bytes in its region file under the
# swap load costs no I/O error (each block rebuilt without its fragment, the leg named
# and counted); two such servers give EIO at worst, never wrong data.
. "$RSWAP_TOP/tests/lib/guest.sh"

KO=$RSWAP_TOP/rswap.ko
LOAD=${RSWAP_SWAPLOAD:-$RSWAP_OUT/swapload}
CG=/sys/fs/cgroup/rswap-57
SRV=$RSWAP_TOP/tools/rswap-server/target/release/rswap-server
CTL=$RSWAP_TOP/tools/rswapctl/target/release/rswapctl
IP=${RSWAP_GUEST_IP:-192.0.2.1}
PORTS=(18571 18572 18573 18574 18575 18576)
CFG=/sys/kernel/config/rswap
T=$CFG/ec
OUT=$RSWAP_OUT/57-ec
SD=/tmp/rswap-57
SIZE_MB=16 SWAP_SIZE_MB=32
mkdir -p "$OUT"

PIDS=() MOUNTS=
cleanup() {
	{ [ -d "$T" ] && echo 0 > "$T/enable"; } 2>/dev/null
	rmdir "$T" 2>/dev/null
	swapoff -a 2>/dev/null
	rmdir $CG 2>/dev/null
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for m in $MOUNTS; do umount "$m" 2>/dev/null; done
	true
}
trap cleanup EXIT

setup() {
	[ -f "$KO" ] || ktap_skip_rest "rswap.ko not built"
	[ -x "$SRV" ] || ktap_skip_rest "rswap-server not built (scripts/build-server.sh)"
	command -v fio >/dev/null || ktap_skip_rest "no fio in the guest image"
	rdma_up >/dev/null || ktap_skip_rest "$RDMA_DEV unavailable"
	dmesg_mark "57-ec"
	for i in 0 1 2 3 4 5; do
		mkdir -p $SD$i && mount -t tmpfs -o size=$((SWAP_SIZE_MB + 32))M,mode=0700 rswap-57 $SD$i && MOUNTS="$MOUNTS $SD$i"
		start_server $i || ktap_skip_rest "rswap-server does not start"
	done
	grep -q '^rswap ' /proc/modules || rswap_load || ktap_skip_rest "insmod failed"
}

# start_server I: server I on its port and state directory (PIDS[I]), keeping a region
# $GRACE seconds (default 10) after its client's last queue (or its own restart): a queue
# that reconnects (a keep-alive probe late on a loaded debug guest) finds its region. The
# pool holds a swap disk's region and the regions of the last tests in their grace.
start_server() {
	server_start "$OUT/server$1.log" --listen "$IP:${PORTS[$1]}" --size $((SWAP_SIZE_MB + 24))M \
		--state-dir $SD$1 --grace "${GRACE:-10}" --insecure >/dev/null && PIDS[$1]=$SPID
}

# start_clean I: server I again after a test that killed it, its state directory emptied
# first: the disk whose regions it held is gone, and a restored region would hold pool
# memory for the grace period, which the next test's region may need.
start_clean() {
	rm -f $SD$1/region-*
	start_server $1
}

# reload [PARAM...]: rswap.ko unloaded and loaded again with PARAMs (none: its defaults).
# If that fails: loaded with its defaults if it is not loaded (for the tests that follow),
# and 1.
reload() {
	{ rmmod rswap && rswap_load "$@"; } && return 0
	grep -q '^rswap ' /proc/modules || rswap_load
	return 1
}

# servers N: the first N servers as a `servers` list.
servers() {
	local i list=
	for ((i = 0; i < $1; i++)); do list+="${list:+,}$IP:${PORTS[$i]}"; done
	echo "$list"
}

# ec_enable CODE [MB]: a target of code CODE (K+R) and MB (default SIZE_MB) over the first
# K+R servers, with a client id of its own (no region of an earlier test), extra_reads
# $EXTRA if set (the default, 1, otherwise), recovery_ms $RECOVERY_MS (default 2000),
# keepalive_ms 3000 and encrypt=1 if $ENCRYPT is set.
CLIENT=$((0x5700))
ec_enable() {
	local k=${1%+*} r=${1#*+}
	rmdir $T 2>/dev/null
	CLIENT=$((CLIENT + 1))
	mkdir $T && echo ${2:-$SIZE_MB}M > $T/size && echo 2 > $T/queues && echo $CLIENT > $T/client_id \
		&& echo "${RECOVERY_MS:-2000}" > $T/recovery_ms && echo 3000 > $T/keepalive_ms \
		&& echo "$1" > $T/code && servers $((k + r)) > $T/servers \
		&& { [ -z "${EXTRA:-}" ] || echo "$EXTRA" > $T/extra_reads; } \
		&& { [ -z "${ENCRYPT:-}" ] || echo 1 > $T/encrypt; } && echo 1 > $T/enable
}

# late_line: the line of `stats` on late binding.
late_line() { grep '^code ' $T/stats; }

ec_disable() {
	echo 0 > $T/enable && rmdir $T
}

# leg_region I: the region file of leg I of the enabled target.
leg_region() {
	local id
	id=$(sed -n "s/^leg$1 .* region=\([0-9]*\) .*/\1/p" $T/state)
	printf '%s%d/region-%016x.mem' $SD "$1" "$id"
}

# placed K R BLOCKS FILE: FILE, written at the start of the disk, is where the placement
# rule puts it in the legs' region files: prints the fragments that are not, and fails if
# any is not. Data fragments and whole blocks (replication) are compared with FILE's bytes
# and P with the XOR of the block's data fragments; Q (RAID-6) is checked by reads that
# need it (ec_lose). One python3 pass over the files (tests/lib/ec_placement.py).
placed() {
	local i regions=()
	for ((i = 0; i < $1 + $2; i++)); do regions+=("$(leg_region $i)"); done
	python3 "$RSWAP_TOP/tests/lib/ec_placement.py" "$1" "$2" "$3" "$4" "${regions[@]}"
}

# fio_verify NAME ARGS...: fio random writes of 4 to 64 KiB on $dev, then reads them all
# back and verifies them (crc32c), with ARGS; prints why it failed, if it did.
fio_verify() {
	local name=$1 rc errs
	shift
	fio --name="$name" --filename=$dev --direct=1 --ioengine=libaio --rw=randwrite --bsrange=4k-64k \
		--verify=crc32c --verify_fatal=1 --do_verify=1 --group_reporting "$@" \
		--output-format=json --output="$OUT/fio-$name.json" >"$OUT/fio-$name.log" 2>&1
	rc=$?
	errs=$(grep -o '"total_err" : [0-9]*' "$OUT/fio-$name.json" 2>/dev/null | awk '{ s += $3 } END { print s + 0 }')
	[ $rc = 0 ] && [ "$errs" = 0 ] || echo "fio $name: exit $rc, errors $errs: $(tail -3 "$OUT/fio-$name.log" | tr '\n' ' '); "
}

# ec_test CODE: enable, state, regions of size/k, fio verify, the legs' counters in stats
# and in rswapctl status --json, placement (unless $PLACED is set), disable.
ec_test() {
	local code=$1 k=${1%+*} r=${1#*+} why= blocks=16
	if ! ec_enable "$code"; then
		ktap_fail "enable: $(cat $T/last_error 2>&1); $(dmesg | grep rswap | tail -4)"
		rmdir $T 2>/dev/null
		return
	fi
	dev=/dev/$(cat $T/device)
	st=$(cat $T/state)
	[[ $(head -1 <<<"$st") == "connected queues=$((2 * (k + r)))/$((2 * (k + r))) "*" code=$code legs_up=$((k + r))/$((k + r))" ]] \
		|| why+="state '$(head -1 <<<"$st")'; "
	[ "$(grep -c '^leg[0-9] .* connected queues=2/2 region=' <<<"$st")" = $((k + r)) ] || why+="leg lines: $st; "
	[ "$(blockdev --getsize64 $dev)" = $((SIZE_MB << 20)) ] || why+="size $(blockdev --getsize64 $dev); "
	for ((i = 0; i < k + r; i++)); do
		sz=$(stat -c %s "$(leg_region $i)" 2>/dev/null)
		[ "$sz" = $(((SIZE_MB << 20) / k)) ] || why+="leg $i region file $(leg_region $i): ${sz:-none} bytes; "
	done
	why+=$(fio_verify "$code" --iodepth=32 --numjobs=2 --size=2M --offset_increment=$((SIZE_MB / 2))M)
	# A read asks min(extra_reads, r) more legs and, when it does, ends with the first
	# that decode: fio's verify reads ended early.
	extra=$(( ${EXTRA:-1} < r ? ${EXTRA:-1} : r ))
	late=$(late_line)
	if [ $extra = 0 ]; then
		[[ $late == "code $code extra_reads=0 early_reads=0 late_leg_reads=0" ]] || why+="stats: '$late'; "
	else
		[[ $late =~ ^"code $code extra_reads=$extra early_reads="[1-9][0-9]*" late_leg_reads="[0-9]+$ ]] \
			|| why+="stats, no read ended early: '$late'; "
	fi
	# A line per leg in stats: every leg took writes (each holds a fragment of every page).
	legs=$(grep '^leg[0-9] reads=' $T/stats)
	[ "$(grep -c ' writes=[1-9]' <<<"$legs")" = $((k + r)) ] || why+="stats leg lines: $(tr '\n' ' ' <<<"$legs"); "
	# rswapctl shows the same legs: each with the server it was given, connected, writes.
	"$CTL" status ec --json >"$OUT/status-$code.json" 2>&1 || why+="rswapctl status failed: $(head -3 "$OUT/status-$code.json"); "
	python3 - "$OUT/status-$code.json" "$(servers $((k + r)))" "$code" >"$OUT/status-$code.check" 2>&1 <<'PY' \
		|| why+="rswapctl status --json: $(tail -1 "$OUT/status-$code.check"); "
import json, sys
st, servers, code = json.load(open(sys.argv[1])), sys.argv[2].split(","), sys.argv[3]
legs = st["legs"]
assert [l["leg"] for l in legs] == list(range(len(servers))), legs
for l, server in zip(legs, servers):
    assert (l["server"], l["state"], l["queues_live"]) == (server, "connected", 2), l
    # A leg's I/O fails only when a reconnect flushes it (and the disk issues it again):
    # on a loaded debug guest a late keep-alive probe can start one.
    assert l["writes"] > 0 and (l["errors"] == 0 or l["recoveries"] > 0), l
assert st["stats"]["late_binding"]["code"] == code, st["stats"]["late_binding"]
print(" ".join(f'{l["leg"]}:{l["server"]}:{l["state"]}:w={l["writes"]}:r={l["reads"]}:late={l["late"]}' for l in legs))
PY
	head -c $((blocks * 4096)) /dev/urandom > "$OUT/blocks"
	dd if="$OUT/blocks" of=$dev bs=64k oflag=direct status=none || why+="dd write failed; "
	dd if=$dev of="$OUT/blocks-back" bs=4k count=$blocks iflag=direct status=none
	cmp -s "$OUT/blocks-back" "$OUT/blocks" || why+="read back differs; "
	# Placement depends on the code alone: $PLACED says it was checked already.
	if [ -z "${PLACED:-}" ]; then
		misplaced=$(placed $k $r $blocks "$OUT/blocks") || why+="$(wc -l <<<"$misplaced") fragments misplaced: $(head -3 <<<"$misplaced" | tr '\n' ' '); "
	fi
	errors=$(sed -n 's/^total .*errors=\([0-9]*\).*/\1/p' $T/stats)
	[ "${errors:-x}" = 0 ] || why+="stats errors '$errors'; "
	ec_disable || why+="disable failed; "
	if [ -z "$why" ]; then
		ktap_pass
		ktap_diag "$st"
		ktap_diag "$code: $(head -1 <<<"$st" | cut -d' ' -f1-2,10-); fio $(grep -o '"io_bytes" : [0-9]*' "$OUT/fio-$code.json" | head -2 | awk '{ printf "%s ", $3 }')bytes; $late"
		ktap_diag "$code: rswapctl status --json legs: $(cat "$OUT/status-$code.check")"
	else
		ktap_fail "$code: $why"
	fi
}

t_striping4() { ec_test 4+0; }
ktap_test "ec 4+0 (striping over 4 servers): enable, a state line per server, regions of size/4, fio verify, every 1 KiB fragment where the placement rule puts it" t_striping4

t_replication3() { ec_test 1+2; }
ktap_test "ec 1+2 (three copies): enable, state, regions of the whole size, fio verify, every block on every server" t_replication3

t_mirror() { ec_test 1+1; }
ktap_test "ec 1+1 (mirroring over 2 servers): enable, state, regions of the whole size, fio verify, every block on both servers" t_mirror

t_parity2() { ec_test 2+1; }
ktap_test "ec 2+1 (one parity fragment): enable, state, regions of size/2, fio verify, data fragments placed, P the XOR of them" t_parity2

t_pq4() { ec_test 4+2; }
ktap_test "ec 4+2 (P and Q, the kernel's RAID-6 library): enable, state, regions of size/4, fio verify, data fragments and P placed, reads ended by the first 4 of 5 legs" t_pq4

t_pq4_late2() { EXTRA=2 PLACED=1 ec_test 4+2; }
ktap_test "ec 4+2 with extra_reads=2: reads ask all 6 legs and end with the first that decode; fio verify" t_pq4_late2

# enc_field KEY: the value of KEY= in the encryption line of stats.
enc_field() { sed -n "s/^encryption .* $1=\([0-9]*\).*/\1/p" $T/stats; }

# flip_fragments REGION FIRST COUNT: flips a byte in each of the COUNT 1 KiB fragments
# (4+2) from fragment FIRST of a leg's region file.
flip_fragments() {
	python3 - "$@" <<'PY'
import mmap, sys
with open(sys.argv[1], "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    for b in range(int(sys.argv[2]), int(sys.argv[2]) + int(sys.argv[3])):
        m[b * 1024 + 100] ^= 0x01
PY
}

# 4+2 with encrypt=1: fio verify; blocks of a known plaintext are in no leg's region file;
# the encryption line counts blocks sealed and opened, none that failed verification.
t_enc_pq4() {
	local code=4+2 why= i sealed enc mb=4
	ENCRYPT=1 ec_enable $code $mb || { ktap_fail "enable: $(cat $T/last_error 2>&1)"; rmdir $T 2>/dev/null; return; }
	dev=/dev/$(cat $T/device)
	why+=$(fio_verify enc --iodepth=16 --numjobs=2 --size=1M --offset_increment=$((mb / 2))M)
	yes "rswap-57-known-plaintext" | head -c $((16 * 4096)) | dd of=$dev bs=32k seek=$((mb * 32 - 2)) oflag=direct status=none \
		|| why+="plaintext write failed; "
	for ((i = 0; i < 6; i++)); do
		grep -qa "rswap-57-known-plaintext" "$(leg_region $i)" && why+="leg $i's region holds the plaintext; "
	done
	dd if=$dev bs=32k skip=$((mb * 32 - 2)) count=2 iflag=direct status=none | grep -qa "rswap-57-known-plaintext" \
		|| why+="the plaintext does not read back; "
	dmesg | grep -qE "rswap[0-9]+: encrypted: AES-256-GCM" || why+="no 'encrypted' log line; "
	sealed=$(enc_field sealed)
	[ "${sealed:-0}" -gt 0 ] && [ "$(enc_field opened)" -gt 0 ] && [ "$(enc_field auth_failures)" = 0 ] \
		|| why+="stats: $(grep '^encryption' $T/stats); "
	no_failed_io
	enc=$(grep '^encryption' $T/stats)
	ec_disable || why+="disable failed; "
	verdict "$code encrypted: fio $(grep -o '"io_bytes" : [0-9]*' "$OUT/fio-enc.json" | head -2 | awk '{ printf "%s ", $3 }')bytes; $enc"
}
ktap_test "ec 4+2 with encrypt=1: fio verify, no plaintext in any server's region, blocks sealed and opened, none failed verification" t_enc_pq4

# Servers of an encrypted 4+2 disk alter a fragment of every block written (one byte
# each): legs 1 and 2 in all 32 blocks, leg 3 too in the last 16. Each block read alone:
# with two liars it reads back right (rebuilt without both legs' fragments) and both legs
# are counted; with three no rebuild verifies, the read fails with EIO, counted as a
# block that does not verify. Never wrong bytes.
t_enc_liars() {
	local code=4+2 why= b blocks=32 half=16 wrong=0 ok2=0 eio2=0 ok3=0 eio3=0 l n
	ENCRYPT=1 ec_enable $code 4 || { ktap_fail "enable: $(cat $T/last_error 2>&1)"; rmdir $T 2>/dev/null; return; }
	dev=/dev/$(cat $T/device)
	head -c $((blocks * 4096)) /dev/urandom > "$OUT/liars"
	dd if="$OUT/liars" of=$dev bs=32k oflag=direct status=none || why+="write failed; "
	{ flip_fragments "$(leg_region 1)" 0 $blocks && flip_fragments "$(leg_region 2)" 0 $blocks \
		&& flip_fragments "$(leg_region 3)" $half $half; } || why+="flipping failed; "
	for ((b = 0; b < blocks; b++)); do
		if dd if=$dev of="$OUT/liars-back" bs=4k skip=$b count=1 iflag=direct status=none 2>/dev/null; then
			if ! dd if="$OUT/liars" bs=4k skip=$b count=1 status=none | cmp -s - "$OUT/liars-back"; then
				wrong=$((wrong + 1))
			elif [ $b -lt $half ]; then
				ok2=$((ok2 + 1))
			else
				ok3=$((ok3 + 1))
			fi
		elif [ $b -lt $half ]; then
			eio2=$((eio2 + 1))
		else
			eio3=$((eio3 + 1))
		fi
	done
	[ $wrong = 0 ] || why+="$wrong blocks read back wrong; "
	[ $ok2 = $half ] || why+="two liars: $ok2 of $half blocks read back right, $eio2 EIO; "
	[ $eio3 -gt 0 ] || why+="three liars: no EIO ($ok3 blocks read back right); "
	[ "$(enc_field auth_failures)" = $((eio2 + eio3)) ] || why+="auth_failures $(enc_field auth_failures), $((eio2 + eio3)) reads failed; "
	local counted=
	for l in 0 1 2 3 4 5; do
		n=$(leg_field $l altered) counted+="leg$l altered=$n "
		case $l in
		1 | 2) [ "${n:-0}" -gt 0 ] || why+="leg $l not counted; " ;;
		*) [ "${n:-x}" = 0 ] || why+="leg $l counted (altered=$n); " ;;
		esac
	done
	ec_disable || why+="disable failed; "
	verdict "$code encrypted: legs 1 and 2 altered $half blocks: $ok2 read back right, $eio2 EIO; legs 1, 2 and 3 altered $half: $ok3 right, $eio3 EIO; 0 wrong; $counted"
}
ktap_test "ec 4+2 with encrypt=1, servers altering a fragment of every block: two of them cost no failed read (both legs counted); three give EIO (counted), never wrong bytes" t_enc_liars

# The same disk with rswap.ko crypt_workqueue=1 (reads opened in a workqueue, not in the
# completion), one server altering a fragment of every block: every block reads back
# right (rebuilt without that leg), none fails, that leg alone is counted (the blocks of
# the groups the resync rewrote on it before they were read are not). The module is
# loaded again without the parameter afterwards, for the tests that follow.
t_enc_workqueue() {
	local code=4+2 why= blocks=32 altered others leg1
	if ! reload crypt_workqueue=1; then
		ktap_fail "reloading rswap.ko with crypt_workqueue=1 failed"; return
	fi
	ENCRYPT=1 ec_enable $code 4 || why+="enable: $(cat $T/last_error 2>&1); "
	if [ -z "$why" ]; then
		dev=/dev/$(cat $T/device)
		dmesg | grep -qE "rswap[0-9]+: encrypted: .*reads opened in a workqueue" || why+="no 'reads opened in a workqueue' log line; "
		head -c $((blocks * 4096)) /dev/urandom > "$OUT/wq"
		dd if="$OUT/wq" of=$dev bs=32k oflag=direct status=none || why+="write failed; "
		flip_fragments "$(leg_region 1)" 0 $blocks || why+="flipping failed; "
		dd if=$dev of="$OUT/wq-back" bs=32k count=$((blocks / 8)) iflag=direct status=none || why+="read failed; "
		cmp -s "$OUT/wq" "$OUT/wq-back" || why+="read back wrong; "
		leg1=$(grep '^leg1 ' $T/stats)
		altered=$(sed -n 's/.* altered=\([0-9]*\).*/\1/p' <<<"$leg1")
		others=$(grep '^leg[02-5] ' $T/stats | grep -vc ' altered=0$')
		[ "${altered:-0}" -gt 0 ] && [ "$others" = 0 ] || why+="legs counted: $(grep '^leg' $T/stats | tr '\n' ' '); "
		[ "$(enc_field auth_failures)" = 0 ] || why+="$(grep '^encryption' $T/stats); "
		no_failed_io
		ec_disable || why+="disable failed; "
	else
		rmdir $T 2>/dev/null
	fi
	reload || why+="reloading rswap.ko without crypt_workqueue failed; "
	verdict "$code encrypted, crypt_workqueue=1, leg 1 altered every block: $blocks blocks read back right; $leg1"
}
ktap_test "ec 4+2 with encrypt=1 and crypt_workqueue=1, one server altering a fragment of every block: every block reads back right, that leg counted" t_enc_workqueue


# wait_out LEG: waits (up to 20 s) until leg LEG's line in state says out.
wait_out() {
	for _ in $(seq 200); do
		grep -q "^leg$1 .* out " $T/state && return 0
		sleep 0.1
	done
	return 1
}

# ec_lose CODE: with CODE (K+R) enabled and 16 blocks written, the servers of legs 1 to R
# are SIGKILLed one after the other: each time the blocks read back right at once and
# once the leg is out; then new blocks and fio verify go to the legs left. Then one more
# server, beyond what the code survives: reads fail with EIO and never return wrong
# bytes.
ec_lose() {
	local code=$1 k=${1%+*} r=${1#*+} why= blocks=16 leg last
	ec_enable "$code" || { ktap_fail "enable: $(cat $T/last_error 2>&1)"; rmdir $T; return; }
	dev=/dev/$(cat $T/device)
	head -c $((blocks * 4096)) /dev/urandom > "$OUT/lose-a"
	head -c $((blocks * 4096)) /dev/urandom > "$OUT/lose-b"
	readback() { # FILE OFFSET_BLOCKS
		dd if=$dev of="$OUT/readback" bs=4k skip=$2 count=$blocks iflag=direct status=none
		cmp -s "$OUT/readback" "$1"
	}
	dd if="$OUT/lose-a" of=$dev bs=64k oflag=direct status=none || why+="write failed; "
	# The disk's uevents name the leg whose queue died.
	"$CTL" monitor --json >"$OUT/lose-$code-events" 2>&1 &
	mpid=$!
	monitor_ready $mpid || why+="rswapctl monitor did not start; "
	for ((leg = 1; leg <= r; leg++)); do
		kill -KILL "${PIDS[$leg]}"; wait "${PIDS[$leg]}" 2>/dev/null
		readback "$OUT/lose-a" 0 || why+="blocks differ right after leg $leg's server was killed; "
		wait_out $leg || why+="leg $leg not out: $(cat $T/state | tr '\n' ' '); "
		readback "$OUT/lose-a" 0 || why+="blocks differ with leg $leg out; "
		monitor_until "$OUT/lose-$code-events" "\"target\":\"ec\",\"device\":\"rswap[0-9]+\",\"leg\":$leg,\"queue\":[01],\"event\":\"dead\"" \
			|| why+="no dead event of leg $leg: $(tr '\n' ' ' <"$OUT/lose-$code-events"); "
	done
	kill $mpid 2>/dev/null; wait $mpid 2>/dev/null
	dd if="$OUT/lose-b" of=$dev bs=4k seek=$blocks oflag=direct status=none || why+="degraded write failed; "
	readback "$OUT/lose-b" $blocks || why+="blocks written degraded differ; "
	why+=$(fio_verify "lose-$code" --iodepth=16 --size=4M --offset=$((SIZE_MB / 2))M)
	errors=$(sed -n 's/^total .*errors=\([0-9]*\).*/\1/p' $T/stats)
	[ "${errors:-x}" = 0 ] || why+="stats errors '$errors'; "
	st1=$(head -1 $T/state)
	# One more than the code survives: every read fails, none returns wrong bytes.
	last=$(((r + 1) % (k + r)))
	kill -KILL "${PIDS[$last]}"; wait "${PIDS[$last]}" 2>/dev/null
	wait_out $last || why+="leg $last not out; "
	dd if=$dev of="$OUT/lose-back" bs=4k count=$blocks iflag=direct status=none 2>"$OUT/lose-dd.err" \
		&& why+="a read with $((r + 1)) servers gone succeeded; "
	grep -q "Input/output error" "$OUT/lose-dd.err" || why+="no EIO: $(cat "$OUT/lose-dd.err"); "
	cmp -s -n "$(stat -c %s "$OUT/lose-back")" "$OUT/lose-back" "$OUT/lose-a" || why+="wrong bytes read; "
	ec_disable || why+="disable failed; "
	for i in 0 1 2 3 4 5; do kill -0 "${PIDS[$i]}" 2>/dev/null || start_clean $i || why+="server $i does not restart; "; done
	if [ -z "$why" ]; then
		ktap_pass
		ktap_diag "$code with $r legs out: $st1"
	else
		ktap_fail "$code: $why"
	fi
}

# leg_field LEG KEY: the value of KEY= in leg LEG's line of stats.
leg_field() { sed -n "s/^leg$1 .* $2=\([0-9]*\).*/\1/p" $T/stats; }

# no_failed_io: adds to $why unless the disk's stats count no failed I/O.
no_failed_io() {
	local errors
	errors=$(sed -n 's/^total .*errors=\([0-9]*\).*/\1/p' $T/stats)
	[ "${errors:-x}" = 0 ] || why+="stats errors '$errors'; "
}

# verdict DIAG: the test passes, saying DIAG, if nothing went into $why; else it fails with
# $code and $why.
verdict() {
	if [ -z "$why" ]; then
		ktap_pass
		ktap_diag "$1"
	else
		ktap_fail "$code: $why"
	fi
}

# resync_test CODE GROUPS [MBPS]: a server restarted with its state gets the groups written
# while it was away, and those alone, rebuilt on it (at MBPS MiB/s, set while enabled, if
# given: the rebuild then takes at least the time that rate needs); then two other servers
# are killed and every block reads back, now through the restarted server's fragments.
# With $SEGMENTS set, the disk's max_segments must be that; with $WANT_LOG set (an extended
# regular expression), the kernel log must have such a line.
resync_test() {
	local code=$1 groups=$2 mbps=${3:-} why= dirty resynced took k=${1%+*} blocks
	blocks=$((groups * 8))
	RECOVERY_MS=60000 ec_enable "$code" || { ktap_fail "enable: $(cat $T/last_error 2>&1)"; rmdir $T; return; }
	dev=/dev/$(cat $T/device)
	[ -z "${SEGMENTS:-}" ] || [ "$(cat /sys/block/${dev#/dev/}/queue/max_segments)" = "$SEGMENTS" ] \
		|| why+="max_segments $(cat /sys/block/${dev#/dev/}/queue/max_segments), not $SEGMENTS; "
	[ -z "$mbps" ] || echo "$mbps" > $T/rebuild_mbps || why+="rebuild_mbps refused while enabled; "
	head -c $(((64 + blocks) * 4096)) /dev/urandom > "$OUT/resync-a"
	head -c $((blocks * 4096)) /dev/urandom > "$OUT/resync-b"
	dd if="$OUT/resync-a" of=$dev bs=64k oflag=direct status=none || why+="write failed; "
	kill -KILL "${PIDS[1]}"; wait "${PIDS[1]}" 2>/dev/null
	# Groups 8 to 8 + GROUPS - 1 while leg 1 is away: the writes go on without it.
	dd if="$OUT/resync-b" of=$dev bs=4k seek=64 oflag=direct status=none || why+="write without leg 1 failed; "
	dirty=$(leg_field 1 dirty)
	[ "$dirty" = "$groups" ] || why+="leg 1 has ${dirty:-no} dirty groups, not $groups: $(grep '^leg1 ' $T/stats); "
	grep -q "^leg1 .* dirty=$groups\$" $T/state || why+="state: $(grep '^leg1 ' $T/state); "
	# Its region outlives the restart until the leg reconnects.
	GRACE=60 start_server 1 || why+="server 1 does not restart; "
	for _ in $(seq 300); do
		[ "$(leg_field 1 dirty)" = 0 ] && [ "$(leg_field 1 resynced)" -gt 0 ] 2>/dev/null && break
		sleep 0.1
	done
	resynced=$(leg_field 1 resynced)
	[ "$resynced" = "$groups" ] || why+="leg 1 rebuilt ${resynced:-no} groups, not $groups: $(grep '^leg1 ' $T/stats) $(grep '^leg1 ' $T/state); "
	took=$(dmesg | awk -F'[][]' -v n="$groups" '$0 ~ "leg1: back: rebuilding the " n " groups" { b = $2 }
		$0 ~ "leg1: in sync: " n " groups rebuilt" { e = $2 } END { if (b != "" && e != "") printf "%.3f", e - b }')
	[ -n "$took" ] || why+="no 'back' and 'in sync' lines: $(dmesg | grep 'leg1' | tail -3 | tr '\n' ' '); "
	[ -z "${WANT_LOG:-}" ] || dmesg | grep -qE "$WANT_LOG" \
		|| why+="no '$WANT_LOG' line: $(dmesg | grep 'leg1' | tail -3 | tr '\n' ' '); "
	# GROUPS groups of 32 KiB / k each on leg 1 at MBPS MiB/s, between the log's two lines.
	if [ -n "$mbps" ]; then
		awk -v t="${took:-0}" -v need="$(awk -v g="$groups" -v k="$k" -v m="$mbps" 'BEGIN { print 0.9 * g * 32 / k / 1024 / m }')" \
			'BEGIN { exit !(t >= need) }' || why+="$groups groups rebuilt in ${took:-?} s, faster than $mbps MiB/s; "
	fi
	# Legs 0 and 2 gone: every read needs leg 1's fragments.
	kill -KILL "${PIDS[0]}" "${PIDS[2]}"; wait "${PIDS[0]}" "${PIDS[2]}" 2>/dev/null
	cp "$OUT/resync-a" "$OUT/resync-want"
	dd if="$OUT/resync-b" of="$OUT/resync-want" bs=4k seek=64 conv=notrunc status=none
	dd if=$dev of="$OUT/resync-back" bs=4k count=$((64 + blocks)) iflag=direct status=none || why+="read without legs 0 and 2 failed; "
	cmp -s "$OUT/resync-back" "$OUT/resync-want" || why+="blocks read through the rebuilt leg differ: $(cmp "$OUT/resync-back" "$OUT/resync-want" | head -1); "
	no_failed_io
	st=$(grep '^leg' $T/stats | tr '\n' ' ')
	ec_disable || why+="disable failed; "
	kill -KILL "${PIDS[1]}"; wait "${PIDS[1]}" 2>/dev/null
	for i in 0 1 2; do start_clean $i || why+="server $i does not restart; "; done
	verdict "$code, leg 1 restarted with its state: $groups groups rebuilt in $took s${mbps:+ at $mbps MiB/s}; $st"
}

t_resync() { resync_test 4+2 32; }
ktap_test "ec 4+2: a server SIGKILLed and restarted with its state: writes go on without it, then only the 32 groups written meanwhile are rebuilt on it; with two others killed every block reads back through it" t_resync

# A group that too few other legs hold current cannot be rebuilt; the leg's other groups
# can, and are. Over 4+2: group 2 written while legs 1 and 2 are away (stale on both),
# groups 4 to 7 while leg 1 alone is; with leg 3 away too, legs 2 and 1 come back: leg 1
# rebuilds groups 4 to 7 and leaves group 2, which only legs 0, 4 and 5 hold current
# (its rebuild stopped at group 2, for good, before); leg 3 back, both rebuild group 2.
# Then with legs 0 and 4 killed every block reads back through legs 1, 2 and 3.
t_resync_short() {
	local code=4+2 why= l d st
	RECOVERY_MS=60000 ec_enable $code || { ktap_fail "enable: $(cat $T/last_error 2>&1)"; rmdir $T; return; }
	dev=/dev/$(cat $T/device)
	head -c $((64 * 4096)) /dev/urandom > "$OUT/short-want"
	head -c $((32 * 4096)) /dev/urandom > "$OUT/short-h"
	head -c $((8 * 4096)) /dev/urandom > "$OUT/short-g"
	dd if="$OUT/short-want" of=$dev bs=64k oflag=direct status=none || why+="write failed; "
	kill -KILL "${PIDS[1]}"; wait "${PIDS[1]}" 2>/dev/null
	dd if="$OUT/short-h" of=$dev bs=4k seek=32 oflag=direct status=none || why+="write without leg 1 failed; "
	kill -KILL "${PIDS[2]}"; wait "${PIDS[2]}" 2>/dev/null
	dd if="$OUT/short-g" of=$dev bs=4k seek=16 oflag=direct status=none || why+="write without legs 1 and 2 failed; "
	dd if="$OUT/short-h" of="$OUT/short-want" bs=4k seek=32 conv=notrunc status=none
	dd if="$OUT/short-g" of="$OUT/short-want" bs=4k seek=16 conv=notrunc status=none
	[ "$(leg_field 1 dirty)/$(leg_field 2 dirty)" = 5/1 ] \
		|| why+="dirty groups of legs 1 and 2 $(leg_field 1 dirty)/$(leg_field 2 dirty), not 5/1; "
	kill -KILL "${PIDS[3]}"; wait "${PIDS[3]}" 2>/dev/null
	GRACE=60 start_server 2 || why+="server 2 does not restart; "
	GRACE=60 start_server 1 || why+="server 1 does not restart; "
	for _ in $(seq 300); do
		[ "$(leg_field 1 resynced)" = 4 ] && break
		sleep 0.1
	done
	[ "$(leg_field 1 resynced)/$(leg_field 1 dirty)/$(leg_field 2 dirty)" = 4/1/1 ] \
		|| why+="with leg 3 away, leg 1 rebuilt $(leg_field 1 resynced) groups, not 4 (left dirty on legs 1 and 2: $(leg_field 1 dirty)/$(leg_field 2 dirty), not 1/1): $(grep '^leg[123] ' $T/stats | tr '\n' ' '); "
	dmesg | grep -q "leg1: 1 groups cannot be rebuilt now, from group 2" \
		|| why+="no 'cannot be rebuilt now' line of leg 1; "
	GRACE=60 start_server 3 || why+="server 3 does not restart; "
	for _ in $(seq 300); do
		[ "$(leg_field 1 dirty)/$(leg_field 2 dirty)" = 0/0 ] && break
		sleep 0.1
	done
	for l in 1 2; do
		d=$(leg_field $l dirty)
		[ "$d" = 0 ] || why+="leg $l has $d dirty groups with leg 3 back; "
	done
	kill -KILL "${PIDS[0]}" "${PIDS[4]}"; wait "${PIDS[0]}" "${PIDS[4]}" 2>/dev/null
	dd if=$dev of="$OUT/short-back" bs=4k count=64 iflag=direct status=none || why+="read without legs 0 and 4 failed; "
	cmp -s "$OUT/short-back" "$OUT/short-want" || why+="blocks read through legs 1, 2 and 3 differ: $(cmp "$OUT/short-back" "$OUT/short-want" | head -1); "
	no_failed_io
	st=$(grep '^leg[123] ' $T/stats | tr '\n' ' ')
	ec_disable || why+="disable failed; "
	kill -KILL "${PIDS[1]}" "${PIDS[2]}" "${PIDS[3]}"; wait "${PIDS[1]}" "${PIDS[2]}" "${PIDS[3]}" 2>/dev/null
	for i in 0 1 2 3 4; do start_clean $i || why+="server $i does not restart; "; done
	verdict "$code, group 2 stale on legs 1 and 2 with leg 3 away: leg 1 rebuilt groups 4 to 7 and left it; leg 3 back, it was rebuilt on both; $st"
}
ktap_test "ec 4+2: a group that too few other servers hold current is left dirty and the leg's other groups are rebuilt; rebuilt once a server is back; then every block reads back through the rebuilt legs" t_resync_short

# 64 groups of 32 KiB at 1 MiB/s: 2 s at least, twice what the rebuild takes unpaced. A
# group of a mirror is 8 pages on each leg; with rswap.ko's fault_max_sge=6 every device
# takes 6 SGEs a work request, as soft-iWARP does, and the disk 6 segments a request: the
# rebuild must go in runs that fit (it was refused, and the leg left dirty, before). The
# module is loaded again without the parameter afterwards.
t_resync_rate() {
	if ! reload fault_max_sge=6; then
		ktap_fail "reloading rswap.ko with fault_max_sge=6 failed"; return
	fi
	SEGMENTS=6 resync_test 1+2 64 1
	reload || ktap_diag "reloading rswap.ko without fault_max_sge failed"
}
ktap_test "ec 1+2 on queues of 6 SGEs (rswap.ko fault_max_sge=6, as soft-iWARP): the rebuild of a restarted server goes in work requests that fit, keeps to rebuild_mbps, set to 1 MiB/s while enabled; every block then reads back from it alone" t_resync_rate

# A rebuild whose queues stay busy for over a second (the disk's own I/O filling them)
# leaves its group dirty; nothing else starts the rebuild again (the leg is back, and
# writes to a group dirty already mark nothing new): the work must try again on its own.
# rswap.ko's fault_busy_waited_ios=250 refuses the rebuild's first 250 I/Os as busy: the
# first group fails twice (101 tries a time) and is rebuilt at the third, 1 s and then 2 s
# later (before, the leg stayed dirty for good).
t_resync_busy() {
	if ! reload fault_busy_waited_ios=250; then
		ktap_fail "reloading rswap.ko with fault_busy_waited_ios=250 failed"; return
	fi
	# The error's name where the kernel has CONFIG_SYMBOLIC_ERRNAME (Debian's), else its number.
	WANT_LOG="leg1: rebuilding group 8 failed \((EBUSY|Error\(16\))\); 8 groups left dirty, trying again in 2000 ms" \
		resync_test 4+2 8
	reload || ktap_diag "reloading rswap.ko without fault_busy_waited_ios failed"
}
ktap_test "ec 4+2: a rebuild whose queues stay busy for over a second (rswap.ko fault_busy_waited_ios=250) leaves its group dirty and tries again on its own, 1 s then 2 s later; all 8 groups rebuilt, every block then reads back through the leg" t_resync_busy

# replaced_cleanup: stops the server that replaced leg 1's ($npid) and starts the servers
# of legs 0 to 2 again.
replaced_cleanup() {
	[ -z "${npid:-}" ] || { kill -KILL "$npid"; wait "$npid" 2>/dev/null; }
	for i in 0 1 2; do start_clean $i || why+="server $i does not restart; "; done
}

# replace_test CODE: with CODE (K+R) enabled and the whole disk written, leg 1's server is
# SIGKILLed for good; while its leg is out, replace is refused for a leg in the disk,
# another leg's server and bad values. Blocks are rewritten, then an empty server (another
# port, no state) replaces it at 1 MiB/s: the blocks not rebuilt yet read back right
# during the rebuild (no read is served from them: the new region holds zeros), state and
# servers name the new server (replaced with rswapctl replace), the rebuild is finished at a higher rate set meanwhile, and
# with two other servers killed every block reads back through the new one.
NEW_PORT=18577
replace_test() {
	local code=$1 why= blocks=$((SIZE_MB * 256)) groups=$((SIZE_MB * 32)) npid e old new
	RECOVERY_MS=2000 ec_enable "$code" || { ktap_fail "enable: $(cat $T/last_error 2>&1)"; rmdir $T; return; }
	dev=/dev/$(cat $T/device)
	head -c $((blocks * 4096)) /dev/urandom > "$OUT/replace-want"
	head -c $((64 * 4096)) /dev/urandom > "$OUT/replace-b"
	dd if="$OUT/replace-want" of=$dev bs=1M oflag=direct status=none || why+="write failed; "
	old=$(sed -n 's/^leg1 .* region=\([0-9]*\) .*/\1/p' $T/state)
	kill -KILL "${PIDS[1]}"; wait "${PIDS[1]}" 2>/dev/null
	wait_out 1 || why+="leg 1 not out: $(grep '^leg1 ' $T/state); "
	server_start "$OUT/server-new.log" --listen "$IP:$NEW_PORT" --size $((SWAP_SIZE_MB + 8))M \
		--grace 0 --insecure >/dev/null && npid=$SPID || why+="the new server does not start; "
	# Refused, each with its reason, and nothing changes.
	refused() { # VALUE ERRNO-TEXT REASON
		e=$( { echo "$1" > $T/replace; } 2>&1 ) && { why+="replace '$1' accepted; "; return; }
		[[ $e == *"$2"* ]] || why+="replace '$1': '$e', not $2; "
		grep -qF "$3" $T/last_error || why+="replace '$1': last_error '$(cat $T/last_error)'; "
	}
	refused "0 $IP:$NEW_PORT" "busy" "replace: leg 0: the leg is in the disk"
	refused "1 $IP:${PORTS[2]}" "Invalid argument" "replace: leg 1: that server is another leg's"
	refused "7 $IP:$NEW_PORT" "Invalid argument" "replace: leg 7: the disk has no such leg"
	refused "1" "Invalid argument" "replace: LEG SERVER"
	refused "1 192.0.2.300" "Invalid argument" "replace: not an IPv4 or IPv6 address"
	grep -q "^leg1 .* out " $T/state || why+="leg 1 not out after the refusals: $(grep '^leg1 ' $T/state); "
	# Written while leg 1 is out: its new server must get these, not what it had.
	dd if="$OUT/replace-b" of=$dev bs=4k seek=8 oflag=direct status=none || why+="write with leg 1 out failed; "
	dd if="$OUT/replace-b" of="$OUT/replace-want" bs=4k seek=8 conv=notrunc status=none
	echo 1 > $T/rebuild_mbps
	"$CTL" replace ec 1 "$IP:$NEW_PORT" --config-dir "$OUT" >"$OUT/replace.out" 2>&1 \
		|| why+="rswapctl replace failed: $(cat "$OUT/replace.out"); "
	grep -q "^ec: leg 1: replacing its server with $IP:$NEW_PORT" "$OUT/replace.out" || why+="rswapctl replace said: $(cat "$OUT/replace.out"); "
	for _ in $(seq 100); do grep -q "^leg1 .*:$NEW_PORT connected " $T/state && break; sleep 0.1; done
	grep -q "^leg1 .*:$NEW_PORT connected " $T/state || why+="leg 1 not connected to the new server: $(grep '^leg1 ' $T/state); "
	new=$(sed -n 's/^leg1 .* region=\([0-9]*\) .*/\1/p' $T/state)
	[ -n "$new" ] && [ "$new" != "$old" ] || why+="leg 1's region '$new', had '$old'; "
	grep -q ":$NEW_PORT" $T/servers || why+="servers: $(cat $T/servers); "
	# The groups are rebuilt in order, at 1 MiB/s (4 s for 4 MiB of fragments): the last
	# quarter of the disk is read before its rebuild.
	dd if=$dev of="$OUT/replace-back" bs=1M skip=$((SIZE_MB * 3 / 4)) iflag=direct status=none || why+="read during the rebuild failed; "
	during=$(leg_field 1 dirty)
	dd if="$OUT/replace-want" bs=1M skip=$((SIZE_MB * 3 / 4)) status=none | cmp -s "$OUT/replace-back" - \
		|| why+="blocks read during the rebuild differ: $(dd if="$OUT/replace-want" bs=1M skip=$((SIZE_MB * 3 / 4)) status=none | cmp "$OUT/replace-back" - | head -1); "
	[ "${during:-0}" -ge $((groups / 4)) ] || why+="the last quarter was rebuilt before it was read at 1 MiB/s (dirty=${during:-?} after it: $(grep '^leg1 ' $T/stats)); "
	echo 1000 > $T/rebuild_mbps
	for _ in $(seq 600); do [ "$(leg_field 1 dirty)" = 0 ] && break; sleep 0.1; done
	[ "$(leg_field 1 dirty)" = 0 ] && [ "$(leg_field 1 resynced)" -ge $groups ] \
		|| why+="leg 1 not rebuilt: $(grep '^leg1 ' $T/stats); "
	dmesg | grep -q "leg1: rebuilding all $groups groups on its new server" || why+="no 'rebuilding all' line; "
	dmesg | grep -q "leg1: in sync:" || why+="no 'in sync' line; "
	# Legs 0 and 2 gone: every read needs leg 1's new fragments.
	kill -KILL "${PIDS[0]}" "${PIDS[2]}"; wait "${PIDS[0]}" "${PIDS[2]}" 2>/dev/null
	dd if=$dev of="$OUT/replace-back" bs=1M iflag=direct status=none || why+="read without legs 0 and 2 failed; "
	cmp -s "$OUT/replace-back" "$OUT/replace-want" || why+="blocks read through the new server differ: $(cmp "$OUT/replace-back" "$OUT/replace-want" | head -1); "
	no_failed_io
	st=$(grep '^leg1' $T/state)
	ec_disable || why+="disable failed; "
	replaced_cleanup
	verdict "$code: leg 1 on its new server, $groups groups rebuilt ($during left after a read at 1 MiB/s): $st"
}

t_replace() { replace_test 4+2; }
ktap_test "ec 4+2: a lost server replaced by an empty one (replace, refused with a reason for a leg in the disk, another leg's server, bad values): reads during the rebuild never from a block not rebuilt, state and servers name it; with two others killed every block reads back through it" t_replace

# replace_leg1 GROUPS: leg 1's server SIGKILLed for good; once the leg is out an empty
# server ($npid, on NEW_PORT) replaces it; waits (up to 60 s) until it is connected there
# and its GROUPS groups are rebuilt ($rebuilt of them), adding to $why what did not happen.
replace_leg1() {
	kill -KILL "${PIDS[1]}"; wait "${PIDS[1]}" 2>/dev/null
	wait_out 1 || why+="leg 1 not out: $(grep '^leg1 ' $T/state); "
	server_start "$OUT/server-new.log" --listen "$IP:$NEW_PORT" --size $((SWAP_SIZE_MB + 8))M \
		--grace 0 --insecure >/dev/null && npid=$SPID || why+="the new server does not start; "
	echo "1 $IP:$NEW_PORT" > $T/replace || why+="replace refused: $(cat $T/last_error); "
	for _ in $(seq 1800); do
		[ "$(leg_field 1 dirty)" = 0 ] && grep -q "^leg1 .*:$NEW_PORT connected " $T/state && break
		sleep 0.1
	done
	rebuilt=$(leg_field 1 resynced)
	[ "$(leg_field 1 dirty)" = 0 ] && [ "${rebuilt:-0}" -ge "$1" ] \
		|| why+="leg 1 not rebuilt: $(grep '^leg1 ' $T/stats) $(grep '^leg1 ' $T/state); "
}

# enc_replace_test [LIAR]: 4+2 with encrypt=1 (4 MiB, every block written): leg 1's
# server SIGKILLed for good and replaced by an empty one, whose groups are rebuilt from
# the other legs' ciphertext fragments and parity (no key needed); then the servers of
# legs 0 and 2 are SIGKILLed and every block reads back, verified, through the new
# server's fragments. With LIAR, that leg's server alters a fragment of every block (one
# byte each) before the rebuild: the rebuild must check the blocks it puts together
# against their seals, leave LIAR's fragments out of those that do not verify, name LIAR
# (in the log and in altered= of its line of stats) and have its groups rebuilt in
# turn; legs 0 and LIAR are then the ones killed (before, leg 1 got fragments computed
# from LIAR's bytes, and with four legs left no read of those blocks could leave them
# out: EIO).
enc_replace_test() {
	local code=4+2 why= mb=4 npid groups=$((4 * 32)) liar=${1:-} gone=2 i
	[ -z "$liar" ] || gone=$liar
	ENCRYPT=1 ec_enable $code $mb || { ktap_fail "enable: $(cat $T/last_error 2>&1)"; rmdir $T 2>/dev/null; return; }
	dev=/dev/$(cat $T/device)
	head -c $((mb << 20)) /dev/urandom > "$OUT/enc-replace"
	dd if="$OUT/enc-replace" of=$dev bs=1M oflag=direct status=none || why+="write failed; "
	if [ -n "$liar" ]; then
		flip_fragments "$(leg_region $liar)" 0 $((mb * 256)) || why+="flipping failed; "
	fi
	replace_leg1 $groups
	if [ -n "$liar" ]; then
		for _ in $(seq 300); do
			[ "$(leg_field $liar dirty)" = 0 ] && break
			sleep 0.1
		done
		[ "$(leg_field $liar dirty)" = 0 ] || why+="leg $liar has $(leg_field $liar dirty) dirty groups; "
		[ "$(leg_field $liar resynced)" -gt 0 ] 2>/dev/null \
			|| why+="leg $liar's groups were not rebuilt: $(grep "^leg$liar " $T/stats); "
		dmesg | grep -qE "leg$liar: group [0-9]+ did not verify with its fragments when rebuilding leg 1; rebuilt without them" \
			|| why+="leg $liar not named: $(dmesg | grep -E "leg[1$liar]" | tail -3 | tr '\n' ' '); "
		# Blocks are counted, not groups: the rebuild finds dozens of groups of 8 blocks.
		[ "$(leg_field $liar altered)" -ge 8 ] 2>/dev/null \
			|| why+="leg $liar not counted: $(grep "^leg$liar " $T/stats); "
	fi
	kill -KILL "${PIDS[0]}" "${PIDS[$gone]}"; wait "${PIDS[0]}" "${PIDS[$gone]}" 2>/dev/null
	dd if=$dev of="$OUT/enc-replace-back" bs=1M iflag=direct status=none || why+="read without legs 0 and $gone failed; "
	cmp -s "$OUT/enc-replace-back" "$OUT/enc-replace" \
		|| why+="blocks read through the new server differ: $(cmp "$OUT/enc-replace-back" "$OUT/enc-replace" | head -1); "
	[ "$(enc_field auth_failures)" = 0 ] || why+="$(grep '^encryption' $T/stats); "
	no_failed_io
	st=$(grep "^leg[1$liar] " $T/stats | tr '\n' ' ')
	ec_disable || why+="disable failed; "
	[ -z "${npid:-}" ] || { kill -KILL "$npid"; wait "$npid" 2>/dev/null; }
	for i in 0 1 $gone; do start_clean $i || why+="server $i does not restart; "; done
	verdict "$code encrypted: leg 1 replaced, rebuilt${liar:+ without the altered fragments of leg $liar (rebuilt in turn)}, then legs 0 and $gone killed: every block verified; $st"
}
t_enc_replace() { enc_replace_test; }
ktap_test "ec 4+2 with encrypt=1: a lost server replaced by an empty one, rebuilt from ciphertext fragments and parity (no key); with two others killed every block reads back and verifies" t_enc_replace

t_enc_replace_liar() { enc_replace_test 3; }
ktap_test "ec 4+2 with encrypt=1: a server altering its fragments while a replaced one is rebuilt: the rebuild leaves its fragments out and names it, and it is rebuilt too; with it and another killed every block reads back and verifies" t_enc_replace_liar

t_lose_pq() { EXTRA=0 ec_lose 4+2; }
ktap_test "ec 4+2, extra_reads=0: two servers SIGKILLed one after the other: every block reads back (rebuilt from P and Q), writes and fio verify go on (0 errors); a third killed: EIO, never wrong bytes" t_lose_pq

t_lose_copy() { ec_lose 1+2; }
ktap_test "ec 1+2 (late reads of two copies): two servers SIGKILLed: reads and writes go on from the copy left, 0 errors; the third killed: EIO" t_lose_copy

# swap_start CODE [SECS]: swap on a CODE disk, and the swap load ($LOAD_MB, default 32
# MiB, in a cgroup of $LIMIT_MB, default 12 MiB; with SECS, a rewrite phase of SECS
# seconds before its verify passes; $PASSES verify passes if set, else two) started
# ($lpid) and swapping ($swapping pages out).
swap_start() {
	local limit_mb=${LIMIT_MB:-12}
	ec_enable "$1" $SWAP_SIZE_MB || return 1
	dev=/dev/$(cat $T/device)
	swapoff -a 2>/dev/null
	mkswap $dev >/dev/null && swapon $dev || why+="swapon failed; "
	dmesg_mark "57-ec swap $1"
	echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
	mkdir -p $CG
	echo $((limit_mb << 20)) > $CG/memory.max
	# Reclaim throttles the load before the limit, as make bench's swap workload does: a
	# write that waits for a reconnecting leg must not get it killed.
	echo $((limit_mb * 7 / 8 << 20)) > $CG/memory.high
	echo max > $CG/memory.swap.max 2>/dev/null
	out0=$(vm pswpout)
	sh -c "echo \$\$ > $CG/cgroup.procs && exec env ${PASSES:+SWAPLOAD_PASSES=$PASSES} $LOAD ${LOAD_MB:-32} 7 ${2:-}" \
		>"$OUT/swapload-$1.json" 2>"$OUT/swapload-$1.err" &
	lpid=$!
	swapping=$(wait_swapping $lpid "$out0")
}

# end_rewrite: ends the rewrite phase of the swap load ($lpid) if it still runs (its verify
# passes follow); adds to $why if $lpid is not swapload.
end_rewrite() {
	kill -0 $lpid 2>/dev/null && ! stop_rewrite $lpid && kill -0 $lpid 2>/dev/null \
		&& why+="process $lpid is $(cat /proc/$lpid/comm 2>/dev/null), not swapload: not signalled; "
	true
}

# swap_end CODE: waits for the swap load and adds to $why unless it ended with every page
# right and nobody killed, the disk with no failed I/O; then swaps off and disables, with
# the state's first line in $st and the late binding line in $late.
swap_end() {
	timeout 600 tail --pid=$lpid -f /dev/null
	wait $lpid; lrc=$?
	since_mark() { dmesg | sed -n "/rswap-test-mark: 57-ec swap $1/,\$p"; }
	[ "$swapping" -ge 2000 ] || why+="only $swapping pages out before the first kill; "
	[ $lrc = 0 ] && grep -q '"bad_pages": *0' "$OUT/swapload-$1.json" \
		|| why+="swapload exit $lrc: $(tail -n 2 "$OUT/swapload-$1.err" "$OUT/swapload-$1.json" | tr '\n' ' '); "
	since_mark "$1" | grep -q 'Killed process' && why+="a process was killed; "
	no_failed_io
	st=$(cat $T/state)
	late=$(late_line)
	swapoff $dev || why+="swapoff failed; "
	stats=$(cat $T/stats)
	metrics=$("$CTL" metrics 2>&1)
	rmdir $CG 2>/dev/null
	ec_disable || why+="disable failed; "
	[ -z "$why" ] || why+="$(since_mark "$1" | grep -E 'rswap|Killed' | tail -4)"
}

# swap_lose CODE KILLS: under the swap load the servers of legs 0 to KILLS - 1 are
# SIGKILLed, 3 s apart: the load ends with every page right and nobody killed, the disk
# with no failed I/O. The load rewrites pages (20 s at most) until the last kill, then
# its one verify pass checks every page, all of them with every kill done (when the kills
# come in its write phase, as on the debug kernel, it rewrites none).
swap_lose() {
	local code=$1 kills=$2 why= leg
	[ -x "$LOAD" ] || { ktap_skip "no swapload binary at $LOAD"; return; }
	PASSES=1 swap_start "$code" 20 || { ktap_fail "enable: $(cat $T/last_error 2>&1)"; rmdir $T; return; }
	for ((leg = 0; leg < kills; leg++)); do
		[ $leg = 0 ] || sleep 3
		kill -KILL "${PIDS[$leg]}"; wait "${PIDS[$leg]}" 2>/dev/null
	done
	end_rewrite
	swap_end "$code"
	for ((leg = 0; leg < kills; leg++)); do start_clean $leg || why+="server $leg does not restart; "; done
	if [ -z "$why" ]; then
		ktap_pass
		ktap_diag "$code, $kills servers killed: $(cat "$OUT/swapload-$code.json"); $(head -1 <<<"$st" | cut -d' ' -f1-2,10-); $late"
	else
		ktap_fail "$why"
	fi
}

t_swap_lose2() { swap_lose 4+2 2; }
ktap_test "ec 4+2 swap: two servers SIGKILLed under the swap load: 0 bad pages, no process killed, no failed I/O" t_swap_lose2

# Under the swap load (a rewrite phase of at most 600 s: the rebuild of 512 groups takes
# over 100 s on the debug kernel over soft-iWARP) leg 1's server is SIGKILLed;
# once the leg is out an empty server replaces it, and is rebuilt while the load
# rewrites pages; then the servers of legs 0 and 2 are SIGKILLed: every page the load
# reads from then on that is not in memory comes through the new server's fragments.
# 3 s after those kills the test ends the load's rewrite phase (SIGUSR1) and its verify
# pass follows: one, which checks every page once with legs 0 and 2 gone.
t_swap_replace() {
	local code=4+2 why= groups=$((SWAP_SIZE_MB * 32)) npid
	[ -x "$LOAD" ] || { ktap_skip "no swapload binary at $LOAD"; return; }
	PASSES=1 swap_start $code 600 || { ktap_fail "enable: $(cat $T/last_error 2>&1)"; rmdir $T; return; }
	replace_leg1 $groups
	kill -0 $lpid 2>/dev/null || why+="the load ended before the rebuild did; "
	kill -KILL "${PIDS[0]}" "${PIDS[2]}"; wait "${PIDS[0]}" "${PIDS[2]}" 2>/dev/null
	sleep 3
	end_rewrite
	swap_end $code
	grep -q '"rewrites": [1-9]' "$OUT/swapload-$code.json" || why+="no page rewritten: $(cat "$OUT/swapload-$code.json"); "
	replaced_cleanup
	verdict "leg 1 replaced and rebuilt ($rebuilt groups) under the swap load, then legs 0 and 2 killed: $(cat "$OUT/swapload-$code.json")"
}
ktap_test "ec 4+2 swap: a killed server replaced by an empty one under the swap load, rebuilt while pages are rewritten, then two others killed: 0 bad pages, no process killed, no failed I/O" t_swap_replace

# Under the swap load (20 MiB in an 8 MiB cgroup, one verify pass) on an encrypted 4+2
# disk, leg 2's server alters its memory: a loop flips a byte in 32 random fragments of
# its region file every 0.1 s. Every block read that does not verify is rebuilt without
# leg 2: the load ends with 0 bad pages, no process killed and no failed I/O; leg 2 is
# named in the log and counted (altered=, and rswap_target_leg_altered_blocks_total of
# rswapctl metrics), no other leg is, and no block failed verification for good.
t_swap_flip() {
	local code=4+2 why= fpid altered others
	[ -x "$LOAD" ] || { ktap_skip "no swapload binary at $LOAD"; return; }
	ENCRYPT=1 LOAD_MB=20 LIMIT_MB=8 PASSES=1 swap_start $code \
		|| { ktap_fail "enable: $(cat $T/last_error 2>&1)"; rmdir $T; return; }
	python3 - "$(leg_region 2)" <<'PY' >"$OUT/flips" 2>&1 &
import mmap, random, sys, time
with open(sys.argv[1], "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    fragments, flips = len(m) // 1024, 0
    while True:
        for _ in range(32):
            m[random.randrange(fragments) * 1024 + random.randrange(1024)] ^= 0xff
        flips += 32
        print(flips, flush=True)
        time.sleep(0.1)
PY
	fpid=$!
	swap_end $code
	kill $fpid 2>/dev/null; wait $fpid 2>/dev/null
	altered=$(sed -n 's/^leg2 .* altered=\([0-9]*\).*/\1/p' <<<"$stats")
	others=$(grep '^leg[013-5] ' <<<"$stats" | grep -vc ' altered=0$')
	[ "${altered:-0}" -gt 0 ] || why+="leg 2 not counted: $(grep '^leg2 ' <<<"$stats"); "
	grep -qE "^rswap_target_leg_altered_blocks_total\{.*leg=\"2\"\} $altered\$" <<<"$metrics" \
		|| why+="rswapctl metrics: $(grep '^rswap_target_leg_altered' <<<"$metrics" | tr '\n' ' '); "
	[ "$others" = 0 ] || why+="other legs counted: $(grep '^leg' <<<"$stats" | tr '\n' ' '); "
	grep -q '^encryption .* auth_failures=0 ' <<<"$stats" || why+="$(grep '^encryption' <<<"$stats"); "
	dmesg | grep -qE "rswap[0-9]+ leg2: block [0-9]+ failed verification; rebuilt without this leg: its server altered its memory" \
		|| why+="leg 2 not named in the log; "
	verdict "leg 2 flipped $(tail -1 "$OUT/flips") bytes under the swap load; altered=$altered; $(cat "$OUT/swapload-$code.json")"
}
ktap_test "ec 4+2 swap with encrypt=1: one server flipping bytes in its memory under the swap load: 0 bad pages, no process killed, no failed I/O; that leg named in the log and counted" t_swap_flip

# The same server twice is refused with its reason, and leaves no disk.
t_refusals() {
	local why=
	rmdir $T 2>/dev/null
	mkdir $T && echo ${SIZE_MB}M > $T/size && echo 2+0 > $T/code && echo "$IP:${PORTS[0]},$IP:${PORTS[0]}" > $T/servers
	if echo 1 > $T/enable 2>/dev/null; then
		why+="the same server twice enabled; "
		echo 0 > $T/enable
	fi
	[[ "$(cat $T/last_error)" == *"the same server twice"* ]] || why+="same server: last_error '$(cat $T/last_error)'; "
	rmdir $T
	ls /dev/rswap* >/dev/null 2>&1 && why+="a disk is left: $(ls /dev/rswap*); "
	if [ -z "$why" ]; then ktap_pass; else ktap_fail "$why"; fi
}
ktap_test "ec: the same server twice is refused with its reason; no disk is left" t_refusals

t_teardown() {
	if rmmod rswap; then ktap_pass; else ktap_fail "$(dmesg | tail -5)"; fi
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	PIDS=()
}
ktap_test "ec: rmmod works" t_teardown

ktap_test "dmesg: no BUG/WARNING/Oops in the ec tests" dmesg_check_noting

ktap_run setup
