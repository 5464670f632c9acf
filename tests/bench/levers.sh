#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The swap workload on /dev/rswap0 with and without each lever, in one boot: the client
# guest of scripts/levers.sh (qemu/run-pair.sh beside tests/bench/server.sh).
#
#   levers.sh [--swap-mb MIB] [--runs N] [--nvme] [--params P=V+...] LEVER...
#     LEVER        NAME:SETTING+SETTING...: a SETTING is q.ATTR=VALUE (the disk's
#                  /sys/block/DEV/queue/ATTR), vm.NAME=VALUE (/proc/sys/vm/NAME),
#                  p.NAME=VALUE (/sys/module/rswap/parameters/NAME), or t.encrypt=1
#                  (the lever's runs on an encrypted target: encrypt=1)
#     --swap-mb M  the working set (default 32), in a cgroup of half that
#     --runs N     rounds (default 3); each round runs the baseline, then every lever, in
#                  an order rotated by one each round
#     --nvme       also the swap workload on nvme-rdma once per round (for the ratio)
#     --params P   rswap.ko parameters at load, joined by +
#
# Each run's JSON goes to $RSWAP_OUT/levers/NAME-R.json; the summary (median wall time
# per lever, ratio to the baseline's and, with --nvme, to nvme-rdma's) to summary.txt.
. "$RSWAP_TOP/tests/bench/lib.sh"
. "$BENCH/backends.sh"

SWAP_MB=32 RUNS=3 NVME=0 PARAMS= LEVERS=()
while [ $# -gt 0 ]; do
	case $1 in
	--swap-mb) SWAP_MB=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--nvme) NVME=1; shift ;;
	--params) PARAMS=$2; shift 2 ;;
	-*) echo "levers.sh: unknown option $1"; exit 2 ;;
	*) LEVERS+=("$1"); shift ;;
	esac
done
PEER=${RSWAP_PEER_IP:?two guests only (qemu/run-pair.sh)}
DEV_MB=$((SWAP_MB + 64))
SWAP_LIMIT_MB=$((SWAP_MB / 2)) SWAP_HIGH_KB=$((SWAP_MB * 1024 * 7 / 16)) SWAP_TIMEOUT=900
OUT=$RSWAP_OUT/levers
rm -rf "$OUT"; mkdir -p "$OUT"
ctl() { timeout 700 python3 "$BENCH/ctl.py" send "$PEER" "$CTL_PORT" "$@"; }
cp "$RSWAP_OUT/swapload" "$SWAPLOAD" && chmod +x "$SWAPLOAD" || { echo "levers: no swapload"; exit 1; }

# setting_path SETTING DEV: the file a setting writes.
setting_path() {
	local k=${1%%=*}
	case $k in
	q.*) echo "/sys/block/$2/queue/${k#q.}" ;;
	vm.*) echo "/proc/sys/vm/${k#vm.}" ;;
	p.*) echo "/sys/module/rswap/parameters/${k#p.}" ;;
	*) echo "/nonexistent/$k" ;;
	esac
}
# apply LEVER DEV: writes its settings, saving what they replace in SAVED.
SAVED=()
apply() {
	local s f
	SAVED=()
	[ -n "${1#*:}" ] || return 0
	for s in ${1#*:}; do
		[ -n "$s" ] || continue
		f=$(setting_path "$s" "$2")
		SAVED+=("$f=$(sed 's/.*\[\(.*\)\].*/\1/' "$f")")
		echo "${s#*=}" > "$f" || echo "levers: ${1%%:*}: $s refused"
	done
}
restore() {
	local kv
	for kv in "${SAVED[@]}"; do echo "${kv#*=}" > "${kv%%=*}"; done
	SAVED=()
}

echo "levers client: $(uname -r), $(nproc) vCPU, peer $PEER, swap ${SWAP_MB} MiB x $RUNS rounds"
rdma_up || exit 1
ctl --wait=180 ping || { echo "levers: the server guest never answered"; exit 1; }
rc=0 k=0
ALL=("baseline:" "${LEVERS[@]//+/ }")
for r in $(seq "$RUNS"); do
	if [ $NVME = 1 ]; then
		BK_DIR=$OUT/nvme
		mkdir -p "$BK_DIR"
		if backend_nvme_rdma_setup; then
			swap_run "$BK_DEV" "$BK_DIR" "$r" || rc=1
			cp "$BK_DIR/swap-$r.json" "$OUT/nvme-rdma-$r.json"
			cp "$BK_DIR/swapload-$r.json" "$OUT/nvme-rdma-$r.swapload"
		else
			echo "levers: nvme-rdma: $BK_REASON"; rc=1
		fi
		backend_nvme_rdma_teardown
	fi
	BK_DIR=$OUT/rswap RSWAP_BK_PARAMS=${PARAMS//+/ }
	mkdir -p "$BK_DIR"
	backend_rswap_setup || { echo "levers: rswap set-up failed: $BK_REASON"; exit 1; }
	n=${#ALL[@]}
	for ((i = 0; i < n; i++)); do
		lever=${ALL[(i + r - 1) % n]}
		name=${lever%%:*}
		# t.encrypt=1: this lever's runs on an encrypted target of its own.
		enc=0
		[[ " ${lever#*:} " == *" t.encrypt=1 "* ]] && enc=1
		if [ $enc = 1 ]; then
			backend_rswap_teardown
			RSWAP_BK_ENCRYPT=1 backend_rswap_setup || { echo "levers: encrypted set-up failed: $BK_REASON"; exit 1; }
			lever=${lever/t.encrypt=1/}
		fi
		apply "$lever" "${BK_DEV#/dev/}"
		k=$((k + 1))
		swap_run "$BK_DEV" "$BK_DIR" "$k" || rc=1
		restore
		if [ $enc = 1 ]; then
			cat "$RSWAP_CFG/stats" > "$OUT/stats-$name-$r.txt"
			backend_rswap_teardown
			backend_rswap_setup || { echo "levers: rswap set-up failed: $BK_REASON"; exit 1; }
		fi
		cp "$BK_DIR/swap-$k.json" "$OUT/$name-$r.json"
		cp "$BK_DIR/swapload-$k.json" "$OUT/$name-$r.swapload"
		echo "levers: round $r $name: $(grep -o '"wall_s": [0-9.]*' "$OUT/$name-$r.json")"
	done
	cat "$RSWAP_CFG/stats" > "$OUT/stats-$r.txt"
	backend_rswap_teardown
done
python3 - "$OUT" > "$OUT/summary.txt" <<'EOF'
import json, statistics, sys
from pathlib import Path
d = Path(sys.argv[1])
runs = {}
for f in sorted(d.glob("*-*.json")):
    name = f.stem.rsplit("-", 1)[0]
    runs.setdefault(name, []).append(json.loads(f.read_text()))
med = {k: statistics.median(r["wall_s"] for r in v) for k, v in runs.items()}
base = med.get("baseline")
nvme = med.get("nvme-rdma")
for k, v in runs.items():
    walls = ", ".join(f'{r["wall_s"]:.1f}' for r in v)
    extra = f"  {med[k] / base:.2f}x baseline" if base else ""
    if nvme and k != "nvme-rdma":
        extra += f"  {med[k] / nvme:.2f}x nvme-rdma"
    pin = statistics.median(r["pswpin"] for r in v)
    pout = statistics.median(r["pswpout"] for r in v)
    print(f"{k}: median {med[k]:.1f} s ({walls}); pswpin {pin:.0f}, pswpout {pout:.0f}{extra}")
    # The workload's phases (swapload's own line): write, in-order and strided verify.
    loads = [json.loads(f.read_text()) for f in sorted(d.glob(f"{k}-*.swapload"))
             if f.read_text().strip()]
    if loads:
        ph = ", ".join(f"{p} {statistics.median(x[p] for x in loads):.1f} s"
                       for p in ("write_s", "verify1_s", "verify2_s"))
        mf = statistics.median(x["majflt"] for x in loads)
        print(f"  phases (medians): {ph}; major faults {mf:.0f}")
EOF
cat "$OUT/summary.txt"
ctl stop > /dev/null
echo "levers client: done (rc $rc)"
exit $rc
