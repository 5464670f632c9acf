#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The data path over soft-RoCE in one guest: configfs, /dev/rswap0 backed by
# rswap-server, data integrity (fio verify), bounds, the data really living on the server,
# pinning while open, a server that is not there, enable/disable cycles, and removal of
# the RDMA device under I/O.
. "$RSWAP_TOP/tests/lib/guest.sh"

KO=$RSWAP_TOP/rswap.ko
SRV=$RSWAP_TOP/tools/rswap-server/target/release/rswap-server
IP=${RSWAP_GUEST_IP:-192.0.2.1}
PORT=7471 # rswap's port: both sides below leave it at its default
CFG=/sys/kernel/config/rswap
T=$CFG/t0
OUT=$RSWAP_OUT/30-datapath
mkdir -p "$OUT"
SIZE_MB=64
DEV=/dev/rswap0

# The tests run in this order on one target, $T: t_bad_values makes it, t_enable connects
# it and the later tests use it and what earlier ones left (t_limits' $transport and $q,
# t_io_8m's /tmp/rand8, t_stats' counters), up to t_removal, which removes it.
setup() {
	target_suite_start
	dmesg_mark "30-datapath"

	# No port: rswap-server listens on rswap's, 7471.
	server_start "$OUT/server.log" --listen "$IP" --size 192M --grace 120 --insecure \
		|| ktap_skip_rest "rswap-server does not start"
}

t_configfs() {
	rswap_load && [ -d $CFG ]
	if [ $? = 0 ]; then ktap_pass; else ktap_fail; ktap_skip_rest "module not loaded"; fi
}
ktap_test "configfs: the subsystem appears when rswap loads" t_configfs

# --- bad values -----------------------------------------------------------------------
t_bad_values() {
	mkdir $T
	bad=0 why=
	try_bad() { # attr value expected-dmesg-text
		dmesg_mark "bad $1=$2"
		if echo "$2" > "$T/$1" 2>/dev/null; then bad=1; why+="$1=$2 accepted; "; return; fi
		dmesg | tail -5 | grep -q "configfs: $1: " || { bad=1; why+="$1=$2: no reason in dmesg; "; }
		# The same reason, without the log's prefix, in last_error. (rswap's last line, not the
		# log's: a loaded host interleaves others, e.g. the clocksource watchdog's.)
		[[ "$(dmesg | grep ' rswap: ' | tail -1)" == *"configfs: $(cat $T/last_error)" ]] || { bad=1; why+="$1=$2: last_error '$(cat $T/last_error)'; "; }
	}
	try_bad addr 1.2.3
	try_bad addr 300.1.1.1
	try_bad addr hello
	try_bad port 0
	try_bad port 70000
	try_bad size 5K
	try_bad size 4097
	try_bad size 2T
	try_bad size 12Q
	try_bad queues 0
	try_bad queues 65
	try_bad queue_depth 0
	try_bad queue_depth 99999
	try_bad client_id 0
	try_bad timeout_ms 5
	try_bad io_timeout_ms 99
	try_bad io_timeout_ms 3600001
	try_bad enable 2
	dmesg_mark "enable without addr"
	echo 1 > $T/enable 2>/dev/null && { bad=1; why+="enable without addr accepted; "; }
	[ "$(cat $T/last_error)" = "enable: set addr (or servers) first" ] || { bad=1; why+="last_error after enable: '$(cat $T/last_error)'; "; }
	if [ $bad = 0 ]; then ktap_pass; ktap_diag "last_error: $(cat $T/last_error)"; else ktap_fail "$why"; fi
}
ktap_test "configfs: bad values are rejected with EINVAL and a reason in dmesg and in last_error" t_bad_values

# The settings of a disk over several servers, on a target of their own ($E): what each
# takes and shows, and what enable refuses before it connects anything.
t_legs_settings() {
	local E=$CFG/legs hex
	hex=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	mkdir $E
	bad=0 why=
	want() { # attr text: the attribute shows text
		[ "$(cat "$E/$1")" = "$2" ] || { bad=1; why+="$1 shows '$(cat "$E/$1")', not '$2'; "; }
	}
	refused() { # attr value reason
		if echo "$2" > "$E/$1" 2>/dev/null; then bad=1; why+="$1=$2 accepted; "; return; fi
		[ "$(cat $E/last_error)" = "$1: $3" ] || { bad=1; why+="$1=$2: last_error '$(cat $E/last_error)'; "; }
	}
	enable_refused() { # reason
		if echo 1 > $E/enable 2>/dev/null; then bad=1; why+="enable accepted ($1); "; echo 0 > $E/enable; return; fi
		[ "$(cat $E/last_error)" = "enable: $1" ] || { bad=1; why+="enable: last_error '$(cat $E/last_error)', not '$1'; "; }
	}
	want code 1+0; want servers "(none)"; want secrets "(none)"; want extra_reads 1; want rebuild_mbps 200
	refused code 3+1 "k must be 1, 2, 4 or 8"
	refused code 4+3 "r must be 0, 1 or 2"
	refused code four "not a code (K+R, e.g. 4+2)"
	refused servers 192.0.2.5:0 "a port is 1 to 65535"
	refused servers "192.0.2.5,,192.0.2.6" "an empty entry in the list"
	refused servers "$(printf '192.0.2.5,%.0s' 1 2 3 4 5 6 7 8 9 10)192.0.2.5" "more than 10 entries"
	refused servers "[fd00::5" "an IPv6 address opened with '[' is closed with ']'"
	refused servers 192.0.2.256 "not an IPv4 or IPv6 address"
	refused secrets "-,zz" "a secret is hexadecimal digits"
	refused secret "key:rswap:a,b" "a key's description has a ','"
	refused extra_reads 3 "number out of range"
	refused rebuild_mbps 0 "number out of range"
	echo "192.0.2.5:7000, [fd00::5]:7001,fd00::6" > $E/servers
	want servers "192.0.2.5:7000,[fd00::5]:7001,fd00::6"
	echo "-,$hex,-" > $E/secrets; want secrets "-,(set),-"
	echo 64M > $E/size; echo 4+2 > $E/code
	enable_refused "code 4+2 needs 6 servers, 3 given"
	echo "$IP" > $E/addr
	enable_refused "set addr (one server) or servers, not both"
	rmdir $E; mkdir $E; echo 64M > $E/size; echo 4+1 > $E/code; echo 2 > $E/extra_reads
	echo "$(printf '192.0.2.5:700%s,' 1 2 3 4)192.0.2.5:7005" > $E/servers
	enable_refused "extra_reads 2 is more than the 1 parity fragments of code 4+1"
	echo 1 > $E/extra_reads; echo "-,$hex" > $E/secrets
	enable_refused "secrets: 5 entries needed, 2 given"
	echo none > $E/secrets
	# One server in servers with code 1+0 is the plain disk; rebuild_mbps is live.
	rmdir $E; mkdir $E; echo 64M > $E/size; echo 2 > $E/queues
	echo "$IP:$PORT" > $E/servers
	if echo 1 > $E/enable 2>/dev/null; then
		[[ "$(cat $E/state)" == "connected queues=2/2 "* ]] || { bad=1; why+="servers=$IP:$PORT: state '$(cat $E/state)'; "; }
		echo 500 > $E/rebuild_mbps 2>/dev/null && want rebuild_mbps 500 || { bad=1; why+="rebuild_mbps refused while enabled; "; }
		echo 0 > $E/enable
	else
		bad=1; why+="servers=$IP:$PORT with code 1+0: enable failed: $(cat $E/last_error); "
	fi
	rmdir $E
	if [ $bad = 0 ]; then ktap_pass; else ktap_fail "$why"; fi
}
ktap_test "configfs: code, servers, secrets, extra_reads, rebuild_mbps: defaults, refusals with their reasons, enable's checks; one server in servers is the plain disk; rebuild_mbps changes while enabled" t_legs_settings

t_enable() {
	dmesg_mark "configure"

	# The port is left at its default, which must be rswap's 7471, where the server listens.
	echo "$IP" > $T/addr; echo ${SIZE_MB}M > $T/size; echo 2 > $T/queues
	echo 0x1234 > $T/client_id; echo 32 > $T/queue_depth
	# The request timeout: 30000 by default, then the disk's io_timeout once enabled.
	io_timeout_default=$(cat $T/io_timeout_ms); echo 7000 > $T/io_timeout_ms
	if [ "$(cat $T/port)" = "$PORT" ] && [ "$io_timeout_default" = 30000 ] && echo 1 > $T/enable && [ -b $DEV ] && [ "$(blockdev --getsize64 $DEV)" = $((SIZE_MB << 20)) ] \
		&& [ "$(cat $T/device)" = rswap0 ] && [ "$(blockdev --getss $DEV)" = 4096 ] \
		&& [ "$(cat /sys/block/rswap0/queue/io_timeout)" = 7000 ]; then
		ktap_pass
	else
		ktap_fail "io_timeout_ms default $io_timeout_default, io_timeout $(cat /sys/block/rswap0/queue/io_timeout 2>&1); $(ls -l /dev/rswap* 2>&1; cat $T/state; dmesg | tail -20)"
		ktap_skip_rest "no device"
	fi
	ktap_diag "state: $(cat $T/state)"
}
ktap_test "configfs: enable connects and creates /dev/rswap0 of the requested size, with the request timeout of io_timeout_ms (default 30000)" t_enable

t_read_only() {
	st=$(cat $T/state)
	# Not the region's rkey (nor its address): with them anyone on the fabric could read
	# and write the region.
	if [[ $st == "connected queues=2/2 "* ]] && [[ $st != *rkey* ]] && ! echo 8 > $T/queue_depth 2>/dev/null \
		&& [ "$(cat $T/queue_depth)" = 32 ] && [ "$(cat $T/addr)" = "$IP" ]; then
		ktap_pass
	else
		ktap_fail "state: $st; depth $(cat $T/queue_depth)"
	fi
}
ktap_test "configfs: state shows the connection but not the region's rkey; settings are read-only while enabled" t_read_only

# On iWARP, MPA has the connection's initiator send first: a SEND from the server right
# behind its MPA reply can fail the connect (soft-iWARP reads both off the socket at once
# and refuses the reply: connect error -EINVAL, most often with many queues connecting).
# So there the module asks for the descriptor with the accept; elsewhere it takes the
# SEND, which servers that do not know that request make.
t_descriptor_path() {
	transport=$(ibv_devinfo -d $RDMA_DEV 2>/dev/null | awk '$1 == "transport:" { print $2; exit }')
	want=send
	[ "$transport" = iWARP ] && want=accept
	n=$(grep -c "event=descriptor_posted client_id=4660 .* via=$want " "$OUT/server.log")
	other=$(grep 'event=descriptor_posted client_id=4660 ' "$OUT/server.log" | grep -vc " via=$want ")
	if [ -n "$transport" ] && [ "$n" = 2 ] && [ "$other" = 0 ]; then
		ktap_pass
		ktap_diag "$RDMA_DEV ($transport): 2 descriptors via the $want"
	else
		ktap_fail "$RDMA_DEV ($transport): $n descriptors via the $want, $other otherwise: $(grep 'event=descriptor_posted' "$OUT/server.log")"
	fi
}
ktap_test "connect: on iWARP the region descriptor comes with the accept (the server never sends first), elsewhere in a SEND" t_descriptor_path

# A memory region (an iWARP READ sink) is usable by the QPs of its PD only: a READ that
# fails leaves its sink registered until its QP goes, and only that (failed) QP is in
# the PD. A PD shared by the queues would show as one PD with 2 users (its QPs).
t_pd_per_queue() {
	pds=$(rdma resource show pd | grep 'comm \[rswap\]')
	# rdma_cm creates the QPs, so the RDMA core names them after it.
	qps=$(rdma resource show qp | grep 'comm \[rdma_cm\]')
	npd=$(grep -c . <<<"$pds") nqp=$(grep -c . <<<"$qps")
	used=$(grep -c 'users [1-9]' <<<"$pds")
	if [ "$npd" = 2 ] && [ "$used" = 2 ] && [ "$nqp" = 2 ]; then
		ktap_pass
		ktap_diag "PDs: $(tr -s ' ' <<<"$pds" | tr '\n' ';')"
	else
		ktap_fail "$npd PDs ($used in use), $nqp QPs: $pds / $qps"
	fi
}
ktap_test "pd: each queue's connection has a protection domain of its own (2 queues: 2 PDs, each holding one of the 2 QPs), so an iWARP READ sink is reachable from its own connection only" t_pd_per_queue

t_io_8m() {
	head -c 8M /dev/urandom > /tmp/rand8
	if dd if=/tmp/rand8 of=$DEV bs=1M oflag=direct status=none \
		&& dd if=$DEV of=/tmp/back8 bs=1M count=8 iflag=direct status=none && cmp /tmp/rand8 /tmp/back8; then
		ktap_pass
	else
		ktap_fail
	fi
}
ktap_test "io: 8 MiB of random data written and read back through /dev/rswap0 is identical" t_io_8m

# A device's RDMA READ takes fewer SGEs than its WRITE on real hardware (mlx4: 30 of 32;
# iWARP, soft-iWARP included: 1). One SGE per 4 KiB segment: the disk's max_segments
# must be within both, and a 1 MiB request is then split by the block layer, not sent
# as a READ the device refuses. On iWARP a READ's sink is one registered region (one
# SGE) and only the WRITE's limit counts (siw0: 6). Segments are page-contiguous
# everywhere, which the registration needs.
t_limits() {
	dev_attr() { ibv_devinfo -v -d $RDMA_DEV 2>/dev/null | awk -v k="$1:" '$1 == k { print $2; exit }'; }
	transport=$(ibv_devinfo -d $RDMA_DEV 2>/dev/null | awk '$1 == "transport:" { print $2; exit }')
	sge=$(dev_attr max_sge) sge_rd=$(dev_attr max_sge_rd)
	want=32
	[ -z "$sge" ] || [ "$sge" -ge $want ] || want=$sge
	[ "$transport" = iWARP ] || [ -z "$sge_rd" ] || [ "$sge_rd" -ge $want ] || want=$sge_rd
	q=/sys/block/${DEV#/dev/}/queue
	segs=$(cat $q/max_segments) hw_kb=$(cat $q/max_hw_sectors_kb) vb=$(cat $q/virt_boundary_mask)
	head -c 1M /dev/urandom > /tmp/rand1m
	if [ -n "$sge" ] && [ -n "$sge_rd" ] && [ "$segs" = $want ] && [ "$hw_kb" = $((want * 4)) ] \
		&& [ "$vb" = 4095 ] \
		&& dd if=/tmp/rand1m of=$DEV bs=1M seek=40 count=1 oflag=direct status=none \
		&& dd if=$DEV of=/tmp/back1m bs=1M skip=40 count=1 iflag=direct status=none \
		&& cmp -s /tmp/rand1m /tmp/back1m; then
		ktap_pass
		ktap_diag "$RDMA_DEV ($transport): max_sge $sge, max_sge_rd $sge_rd; $DEV: max_segments $segs, max_hw_sectors_kb $hw_kb, virt_boundary_mask $vb"
	else
		ktap_fail "$RDMA_DEV ($transport): max_sge '$sge' max_sge_rd '$sge_rd' (want $want); max_segments $segs, max_hw_sectors_kb $hw_kb, virt_boundary_mask '$vb'"
	fi
}
ktap_test "limits: the disk takes no more segments than the device's RDMA WRITE SGE limit (max_sge) and, but on iWARP (whose READ sinks are registered), its READ limit (max_sge_rd); its segments are page-contiguous (virt_boundary_mask 4095); 1 MiB requests are split to fit and read back identical" t_limits

t_fio_verify() {
	fio --name=verify --filename=$DEV --direct=1 --ioengine=libaio --rw=randwrite \
		--bsrange=4k-128k --iodepth=32 --numjobs=2 --size=$((SIZE_MB / 2))M --offset_increment=$((SIZE_MB / 2))M \
		--verify=crc32c --verify_fatal=1 --do_verify=1 --group_reporting \
		--output-format=json --output="$OUT/fio-verify.json" >"$OUT/fio-verify.log" 2>&1
	frc=$?
	errs=$(grep -o '"total_err" : [0-9]*' "$OUT/fio-verify.json" | awk '{ s += $3 } END { print s + 0 }')
	if [ $frc = 0 ] && [ "$errs" = 0 ]; then
		ktap_pass
		ktap_diag "fio: $(grep -o '"io_bytes" : [0-9]*' "$OUT/fio-verify.json" | head -2 | tr '\n' ' ')"
	else
		ktap_fail "fio exit $frc, errors $errs; $(tail -20 "$OUT/fio-verify.log")"
	fi
}
ktap_test "io: fio verify (crc32c), random writes then reads, 4k..128k, iodepth 32, 2 jobs" t_fio_verify

# Stats: with merges off, each fio I/O is one request; the counters must move by what
# fio did, request for request and byte for byte.
# Nor is any split: fio's largest request fits the disk's (6 segments on siw0).
t_stats() {
	bsmax=$(cat $q/max_hw_sectors_kb); [ "$bsmax" -le 64 ] || bsmax=64
	cat $T/stats > "$OUT/stats-before.txt"
	echo 2 > /sys/block/rswap0/queue/nomerges
	fio --name=stats --filename=$DEV --direct=1 --ioengine=libaio --rw=randrw --bsrange=4k-${bsmax}k \
		--iodepth=8 --numjobs=2 --size=$((SIZE_MB / 2))M --offset_increment=$((SIZE_MB / 2))M \
		--io_size=6M --group_reporting --output-format=json --output="$OUT/fio-stats.json" \
		>"$OUT/fio-stats.log" 2>&1
	frc=$?
	echo 0 > /sys/block/rswap0/queue/nomerges
	cat $T/stats > "$OUT/stats-after.txt"
	if [ $frc = 0 ] && python3 - "$OUT/stats-before.txt" "$OUT/stats-after.txt" "$OUT/fio-stats.json" \
		>"$OUT/stats-check.txt" 2>&1 <<'PY'
import json, sys

def parse(path):
    lines = {}
    for line in open(path):
        label, *pairs = line.split()
        lines[label] = {k: int(v) for k, v in (p.split("=", 1) for p in pairs if "=" in p)}
    return lines

before, after = parse(sys.argv[1]), parse(sys.argv[2])
job = json.load(open(sys.argv[3]))["jobs"][0]
d = {k: after["total"][k] - before["total"][k] for k in after["total"]}
want = {"reads": job["read"]["total_ios"], "read_bytes": job["read"]["io_bytes"],
        "writes": job["write"]["total_ios"], "write_bytes": job["write"]["io_bytes"],
        "errors": 0}
bad = [f"{k}: moved {d[k]}, fio {v}" for k, v in want.items() if d[k] != v]
if after["total"]["inflight"] != 0:
    bad.append(f"inflight {after['total']['inflight']} at rest")
# A histogram each for reads and writes, each moving by its own requests.
hist = {op: sum(after[f"{op}_latency_us"].values()) - sum(before[f"{op}_latency_us"].values())
        for op in ("read", "write")}
for op in ("read", "write"):
    if hist[op] != d[f"{op}s"]:
        bad.append(f"{op} histogram moved {hist[op]}, {op}s {d[op + 's']}")
queues = [v for k, v in after.items() if k.startswith("queue")]
for k in ("reads", "writes", "read_bytes", "write_bytes"):
    if sum(q[k] for q in queues) != after["total"][k]:
        bad.append(f"queues' {k} do not add up to the total")
print("; ".join(bad) if bad else
      f"reads +{d['reads']} ({d['read_bytes']} bytes), writes +{d['writes']} ({d['write_bytes']} bytes), "
      f"as fio reports; read histogram +{hist['read']}, write histogram +{hist['write']}; {len(queues)} queues")
sys.exit(1 if bad else 0)
PY
	then
		ktap_pass
		ktap_diag "$(cat "$OUT/stats-check.txt")" "$(tail -1 "$OUT/stats-after.txt")"
	else
		ktap_fail "fio exit $frc; $(cat "$OUT/stats-check.txt"); $(cat "$OUT/stats-after.txt")"
	fi
}
ktap_test "stats: the target's counters move with a fio run by exactly the requests and bytes fio reports; the read and write latency histograms by its reads and writes; no errors, nothing in flight after" t_stats

# On iWARP a READ's sink must be registered for remote write (soft-iWARP does not check,
# hardware does): rswap counts the READs it posted so, which must cover every read.
t_iwarp_reads() {
	total_key() { awk -v k="$2" '$1 == "total" { for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) print substr($i, length(k) + 2) }' "$1"; }
	reg0=$(total_key "$OUT/stats-before.txt" registered_reads) reg1=$(total_key "$OUT/stats-after.txt" registered_reads)
	rd0=$(total_key "$OUT/stats-before.txt" reads) rd1=$(total_key "$OUT/stats-after.txt" reads)
	if [ -z "$reg0" ] || [ -z "$reg1" ] || [ -z "$rd0" ] || [ -z "$rd1" ]; then
		ktap_fail "no registered_reads or reads in stats: $(head -1 "$OUT/stats-after.txt")"
	elif [ "$transport" = iWARP ] && [ $((rd1 - rd0)) -gt 0 ] && [ $((reg1 - reg0)) -ge $((rd1 - rd0)) ]; then
		ktap_pass
		ktap_diag "$RDMA_DEV ($transport): registered_reads +$((reg1 - reg0)), reads +$((rd1 - rd0))"
	elif [ "$transport" != iWARP ] && [ -n "$transport" ] && [ "$reg1" = 0 ] && [ $((rd1 - rd0)) -gt 0 ]; then
		ktap_pass
		ktap_diag "$RDMA_DEV ($transport): registered_reads $reg1, reads +$((rd1 - rd0))"
	else
		ktap_fail "$RDMA_DEV (transport '$transport'): registered_reads $reg0 -> $reg1, reads $rd0 -> $rd1"
	fi
}
ktap_test "iwarp: every RDMA READ registers its sink on an iWARP device (registered_reads moves at least as much as reads in the fio run), never on others (it stays 0)" t_iwarp_reads

t_stats_64_queues() {
	M=$CFG/many
	mkdir $M
	echo "$IP" > $M/addr; echo $PORT > $M/port; echo 16M > $M/size; echo 64 > $M/queues
	if echo 1 > $M/enable; then
		dd if=/dev/$(cat $M/device) of=/dev/null bs=1M count=4 iflag=direct status=none
		if cat $M/stats > "$OUT/stats-64.txt" && [ "$(wc -c < "$OUT/stats-64.txt")" -le 4096 ] \
			&& [ "$(sed -n 1p "$OUT/stats-64.txt" | cut -d' ' -f1)" = total ] \
			&& grep -q '^read_latency_us ' "$OUT/stats-64.txt" && grep -q '^write_latency_us ' "$OUT/stats-64.txt" \
			&& { [ "$(grep -c '^queue[0-9]* ' "$OUT/stats-64.txt")" = 64 ] \
				|| grep -q '^queues [0-9]*\.\.63: not shown, the page is full$' "$OUT/stats-64.txt"; }; then
			ktap_pass
			ktap_diag "$(wc -c < "$OUT/stats-64.txt") bytes, $(grep -c '^queue[0-9]* ' "$OUT/stats-64.txt") queue lines; $(tail -1 "$OUT/stats-64.txt")"
		else
			ktap_fail "cat exit or format: $(head -c 300 "$OUT/stats-64.txt"); $(tail -1 "$OUT/stats-64.txt")"
		fi
		echo 0 > $M/enable
	elif [ "$RDMA_TYPE" = siw ] && grep -q 'NoMemory' $M/last_error \
		&& grep -q 'why="queue setup: ibv_create_cq' "$OUT/server.log"; then
		ktap_skip "siw0 refuses the server a completion queue before 64 queues are up: $(grep -o 'why="queue setup: ibv_create_cq[^"]*"' "$OUT/server.log" | tail -1)"
	else
		ktap_fail "enable with 64 queues: $(cat $M/last_error)"
	fi
	rmdir $M
}
ktap_test "stats: a 64-queue target's counters fit in the attribute's page: the total, the histogram, then the queues that fit and a line naming the rest" t_stats_64_queues

# Bounds: the last 4 KiB block works; past the end reads nothing and writes fail.
t_bounds() {
	last=$((SIZE_MB * 256 - 1))
	ok=1
	dd if=/dev/urandom of=/tmp/blk bs=4k count=1 status=none
	dd if=/tmp/blk of=$DEV bs=4k seek=$last oflag=direct status=none || ok=0
	dd if=$DEV of=/tmp/blk2 bs=4k skip=$last count=1 iflag=direct status=none || ok=0
	cmp -s /tmp/blk /tmp/blk2 || ok=0
	n=$(dd if=$DEV bs=4k skip=$((last + 1)) count=1 iflag=direct status=none | wc -c)
	[ "$n" = 0 ] || ok=0
	dd if=/tmp/blk of=$DEV bs=4k seek=$((last + 1)) oflag=direct status=none 2>/dev/null && ok=0
	if [ $ok = 1 ]; then ktap_pass; else ktap_fail "read past end gave $n bytes"; fi
}
ktap_test "io: the last block reads and writes; I/O past the end is short or fails" t_bounds

# The data is on the server: write, tear the disk down (no local copy survives), reconnect
# with the same client id within the server's grace period, read.
t_data_on_server() {
	dd if=/tmp/rand8 of=$DEV bs=1M seek=16 oflag=direct status=none
	echo 0 > $T/enable
	echo 1 > $T/enable
	st=$(cat $T/state)
	if dd if=$DEV of=/tmp/back8 bs=1M skip=16 count=8 iflag=direct status=none && cmp -s /tmp/rand8 /tmp/back8 \
		&& [[ $st == *"epoch=2 "* ]]; then
		ktap_pass
	else
		ktap_fail "state after reconnect: $st"
	fi
}
ktap_test "io: data lives on the server: after disable and a reconnect it reads back" t_data_on_server

t_pinning() {
	exec 3<$DEV
	r1=0; rmmod rswap 2>/dev/null && r1=1
	r2=0; e2=$( (echo 0 > $T/enable) 2>&1) && r2=1
	r3=0; e3=$(rmdir $T 2>&1) && r3=1
	# The disk still works while it is held.
	r4=0; dd if=$DEV of=/dev/null bs=4k count=16 iflag=direct status=none && r4=1
	exec 3<&-
	# Closed but enabled: rmdir still refused (disable first).
	r5=0; e5=$(rmdir $T 2>&1) && r5=1
	if [ $r1 = 0 ] && [ $r2 = 0 ] && [ $r3 = 0 ] && [ $r4 = 1 ] && [ $r5 = 0 ] && grep -q '^rswap ' /proc/modules \
		&& [ -b $DEV ] && [ -d $T ] && [[ $e2 == *busy* ]] && [[ $e3 == *busy* ]] && [[ $e5 == *busy* ]]; then
		ktap_pass
		ktap_diag "disable: ${e2##*: }; rmdir: ${e3##*: }; rmdir after close: ${e5##*: }"
	else
		ktap_fail "rmmod succeeded=$r1 disable succeeded=$r2 ($e2) rmdir succeeded=$r3 ($e3) read=$r4 rmdir after close succeeded=$r5"
		[ $r1 = 1 ] && ktap_skip_rest "module gone"
		[ $r3 = 1 ] || [ $r5 = 1 ] && ktap_skip_rest "target gone"
	fi
	echo 0 > $T/enable
}
ktap_test "pinning: rmmod, disable and rmdir of the target are refused (EBUSY) while /dev/rswap0 is open; rmdir also while enabled" t_pinning

t_no_server() {
	mkdir $CFG/nosrv
	echo "$IP" > $CFG/nosrv/addr; echo 1 > $CFG/nosrv/port; echo 16M > $CFG/nosrv/size
	start=$(date +%s)
	timeout 60 sh -c "echo 1 > $CFG/nosrv/enable" 2>/dev/null; rc=$?
	took=$(( $(date +%s) - start ))
	if [ $rc != 0 ] && [ $took -lt 20 ] && [ "$(cat $CFG/nosrv/enable)" = 0 ] && ! ls /dev/rswap* >/dev/null 2>&1 \
		&& [ "$(rdma resource show qp | grep -c 'comm \[rdma_cm\]')" = 0 ] \
		&& [[ $(cat $CFG/nosrv/last_error) == "enable failed: "*": queue 0: connection "*" (no rswap server at that address?"* ]]; then
		ktap_pass
		ktap_diag "no server: enable failed after ${took}s: $(dmesg | grep 'rswap:.*\(rejected\|failed\)' | tail -1 | sed 's/^\[[^]]*\] //'); last_error: $(cat $CFG/nosrv/last_error)"
	else
		ktap_fail "rc=$rc took=${took}s; $(dmesg | tail -5)"
	fi
	rmdir $CFG/nosrv
}
ktap_test "connect: enable with no server listening fails within 20 s, says why (no server at that address) in last_error, and leaves nothing" t_no_server

t_cycles() {
	pd0=$(rdma resource show pd | grep -c 'comm \[rswap\]')
	ok=1
	for i in $(seq 10); do
		echo 1 > $T/enable || ok=0
		[ -b $DEV ] || ok=0
		echo 0 > $T/enable || ok=0
	done
	pd1=$(rdma resource show pd | grep -c 'comm \[rswap\]')
	qp1=$(rdma resource show qp | grep -c 'comm \[rdma_cm\]')
	mr1=$(rdma resource show mr | grep -c 'comm \[rswap\]')
	if [ $ok = 1 ] && [ "$pd0" = 0 ] && [ "$pd1" = 0 ] && [ "$qp1" = 0 ] && [ "$mr1" = 0 ] && ! [ -e $DEV ]; then
		ktap_pass
	else
		ktap_fail "ok=$ok pd $pd0 -> $pd1, qp $qp1, mr $mr1"
	fi
}
ktap_test "configfs: 10 enable/disable cycles leave no queue, PD, memory region (iWARP's READ sinks) or disk behind" t_cycles

# Device removal under I/O, with nothing to reconnect to: the removal starts recovery,
# which finds no RDMA device for the server's address within recovery_ms.
# The RDMA device's removal itself must end too: rswap lets go of it, and so does the
# server, which rdma_cm tells (the removal hung on siw0 when rdma_cm came before ib_uverbs,
# see rdma_modules in tests/lib/guest.sh).
# soft-iWARP may lose the completions of READs still waiting for their responses (it
# completes ib_drain_qp's marker before them and never flushes them once its device is
# gone), and has delivered a second completion for one work request here: rswap completes
# lost ones as flushed once the QP and its CQ are destroyed and ignores repeated ones, so
# the I/O ends here on siw0 as on rxe0, with no BUG or list corruption.
t_removal() {
	echo 5000 > $T/recovery_ms
	echo 1 > $T/enable
	dmesg_mark "30-datapath: removal"
	fio --name=removal --filename=$DEV --direct=1 --ioengine=libaio --rw=randrw --bs=4k --iodepth=16 \
		--numjobs=2 --time_based --runtime=60 --continue_on_error=none >"$OUT/fio-removal.log" 2>&1 &
	fpid=$!
	sleep 4
	# In the background: the removal waits for every user of the device, rswap-server too
	# (see rdma_modules), and a removal that never ends must fail this test, not stop it.
	rdma link delete $RDMA_DEV &
	dpid=$!
	start=$(date +%s)
	timeout 90 tail --pid=$fpid -f /dev/null; done_rc=$?
	if [ $done_rc != 0 ]; then
		# fio still waits for its I/O: the test fails, and the rest cannot run.
		ktap_fail "fio still running 90 s after the removal; state $(cat $T/state); $(dmesg | grep rswap | tail -5)"
		ktap_skip_rest "I/O hung after the device's removal"
	fi
	timeout 60 tail --pid=$dpid -f /dev/null; del_rc=$?
	if [ $del_rc != 0 ]; then
		why="rdma link delete $RDMA_DEV still running 60 s after fio ended (server running: $(kill -0 "$SPID" 2>/dev/null && echo yes || echo no))"
		# Let the removal end: a server that holds the device open is what it waits for.
		kill -KILL "$SPID" 2>/dev/null
		ktap_fail "$why; $(dmesg | grep rswap | tail -3)"
		ktap_skip_rest "the RDMA device's removal hung"
	fi
	wait $fpid; fio_rc=$?
	took=$(( $(date +%s) - start ))
	st=$(cat $T/state)
	d_rc=1; echo 0 > $T/enable && d_rc=0
	rmdir $T
	m_rc=1; rmmod rswap && m_rc=0
	if [ $done_rc = 0 ] && [ $fio_rc != 0 ] && [ $d_rc = 0 ] && [ $m_rc = 0 ] && [[ $st == dead* ]]; then
		ktap_pass
		ktap_diag "fio ended ${took}s after the removal (exit $fio_rc); state was: $st"
		ktap_diag "queues whose device lost or repeated completions: $(dmesg | sed -n '/rswap-test-mark: 30-datapath: removal/,$p' | grep -c 'the device never completed' || true)"
	else
		ktap_fail "fio done=$done_rc exit=$fio_rc disable=$d_rc rmmod=$m_rc state=$st; $(tail -5 "$OUT/fio-removal.log")"
	fi
	kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=
}
ktap_test "removal: rdma link delete under fio: the queues try to reconnect for recovery_ms, then fail the I/O; no hang, the removal itself ends; disable and rmmod work" t_removal

ktap_test "dmesg: no BUG/WARNING/Oops in the data-path tests" ktap_check dmesg_clean

ktap_run setup
