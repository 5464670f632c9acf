#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A host check of `make check`: `rswapctl metrics` on a fake configfs (plain files: an
# enabled target with the read and write histograms, one of an older module with one
# histogram, a disabled one) parses with a real Prometheus parser, the
# prometheus_client Python package's (Debian's python3-prometheus-client, installed
# here if missing), and has the values of the files. Prints what it checked; exits 1 on
# a failure.
#
#   scripts/check-metrics.sh [RSWAPCTL]   (default: the release build of build-server.sh)
. "$(dirname "$0")/common.sh"

ctl=${1:-$RSWAP_TOP/tools/rswapctl/target/release/rswapctl}
[ -x "$ctl" ] || die "$ctl not built (scripts/build-server.sh)"
# Debian's Python, where the Debian package installs (not a python3 earlier in PATH).
py=/usr/bin/python3
if ! $py -c 'import prometheus_client.parser' 2>/dev/null; then
	need_root
	log "installing python3-prometheus-client"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		python3-prometheus-client >/dev/null \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends python3-prometheus-client >/dev/null; } \
		|| die "could not install python3-prometheus-client"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cfg=$tmp/rswap
# target NAME ENABLE CLIENT_ID STATE STATS: a target directory as the module shows it.
target() {
	mkdir -p "$cfg/$1"
	echo 192.0.2.2 > "$cfg/$1/addr"
	echo 7471 > "$cfg/$1/port"
	echo 8589934592 > "$cfg/$1/size"
	echo "$2" > "$cfg/$1/enable"
	echo "$3" > "$cfg/$1/client_id"
	echo "$4" > "$cfg/$1/state"
	printf '%s' "$5" > "$cfg/$1/stats"
	if [ "$2" = 1 ]; then echo "rswap$(ls "$cfg" | wc -l)" > "$cfg/$1/device"; else : > "$cfg/$1/device"; fi
}
target mem0 1 0x2501 "connected queues=2/2 region=7 epoch=1 rkey=0x1 length=8589934592 recovering=0 dead=0 recoveries=1 retried=0" \
"total reads=300 writes=200 read_bytes=1228800 write_bytes=819200 errors=1 requeues=2 recoveries=1 inflight=3 registered_reads=0
read_latency_us le8=0 le16=100 le32=150 le8388608=40 inf=10
write_latency_us le8=50 le16=50 le32=50 le8388608=50 inf=0
encryption aes-256-gcm sealed=200 opened=300 auth_failures=4 seal_ns=1 open_ns=2
queue0 reads=300 writes=200 read_bytes=1228800 write_bytes=819200 errors=1 requeues=2 recoveries=1 inflight=3 registered_reads=0
"
target old1 1 4660 "recovering queues=1/2 region=8 epoch=2 rkey=0x1 length=8589934592 recovering=1 dead=0 recoveries=0 retried=0" \
"total reads=7 writes=5 read_bytes=28672 write_bytes=20480 errors=0 requeues=0 recoveries=0 inflight=0
latency_us le8=1 le16=11 inf=0
encryption off
"
target off2 0 0x10 disabled ""
: > "$tmp/swaps"
mkdir "$tmp/module"
echo 0.1.0+git20261127.abc1234 > "$tmp/module/version"

"$ctl" --configfs "$cfg" --proc-swaps "$tmp/swaps" --sys-module "$tmp/module" metrics > "$tmp/metrics.prom" \
	|| die "rswapctl metrics failed"
$py - "$tmp/metrics.prom" <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families

text = open(sys.argv[1]).read()
fams = {f.name: f for f in text_string_to_metric_families(text)}
def value(family, sample, **labels):
    for s in fams[family].samples:
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    raise AssertionError(f"no {sample} {labels} in {family}")

mem0 = {"target": "mem0", "client_id": str(0x2501)}
old1 = {"target": "old1", "client_id": "4660"}
off2 = {"target": "off2", "client_id": "16"}
# prometheus_client names a counter family without its _total.
for name, typ in [("rswap_module_info", "gauge"), ("rswap_target_info", "gauge"), ("rswap_target_state", "gauge"),
                  ("rswap_target_queues_live", "gauge"), ("rswap_target_queues_dead", "gauge"),
                  ("rswap_target_reads", "counter"), ("rswap_target_writes", "counter"),
                  ("rswap_target_read_bytes", "counter"), ("rswap_target_write_bytes", "counter"),
                  ("rswap_target_errors", "counter"), ("rswap_target_requeues", "counter"),
                  ("rswap_target_recoveries", "counter"), ("rswap_target_auth_failures", "counter"),
                  ("rswap_target_read_latency_seconds", "histogram"),
                  ("rswap_target_write_latency_seconds", "histogram"),
                  ("rswap_target_latency_seconds", "histogram")]:
    assert name in fams, (name, sorted(fams))
    assert fams[name].type == typ, (name, fams[name].type)
assert value("rswap_module_info", "rswap_module_info", version="0.1.0+git20261127.abc1234") == 1
assert value("rswap_target_state", "rswap_target_state", state="connected", **mem0) == 1
assert value("rswap_target_state", "rswap_target_state", state="recovering", **old1) == 1
assert value("rswap_target_state", "rswap_target_state", state="disabled", **off2) == 1
assert value("rswap_target_queues_live", "rswap_target_queues_live", **old1) == 1
assert value("rswap_target_reads", "rswap_target_reads_total", **mem0) == 300
assert value("rswap_target_write_bytes", "rswap_target_write_bytes_total", **mem0) == 819200
assert value("rswap_target_auth_failures", "rswap_target_auth_failures_total", **mem0) == 4
h = "rswap_target_read_latency_seconds"
assert value(h, h + "_bucket", le="0.000016", **mem0) == 100
assert value(h, h + "_bucket", le="0.000032", **mem0) == 250
assert value(h, h + "_bucket", le="8.388608", **mem0) == 290
assert value(h, h + "_bucket", le="+Inf", **mem0) == 300
assert value(h, h + "_count", **mem0) == 300
w = "rswap_target_write_latency_seconds"
assert value(w, w + "_count", **mem0) == 200
o = "rswap_target_latency_seconds"
assert value(o, o + "_bucket", le="+Inf", **old1) == 12
# The disabled target: info and state only.
assert not [s for f in fams.values() for s in f.samples
            if s.labels.get("target") == "off2" and f.name not in ("rswap_target_info", "rswap_target_state")]
print(f"{len(fams)} families, {sum(len(f.samples) for f in fams.values())} samples parsed")
PY
