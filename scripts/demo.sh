#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`: build what is missing, boot a guest and run qemu/demo.sh in it.
. "$(dirname "$0")/common.sh"
bash "$RSWAP_TOP/scripts/setup-host.sh"
make -s -C "$RSWAP_TOP" modules >/dev/null || die "building rswap.ko failed (run make for details)"
bash "$RSWAP_TOP/scripts/build-server.sh" >/dev/null || die "building rswap-server failed"
out=$RSWAP_TOP/results/demo
rm -rf "$out"; mkdir -p "$out"
gcc -O2 -o "$out/swapload" "$RSWAP_TOP/tests/bench/swapload.c"
log "booting the guest (TCG emulation: the swap step takes a few minutes)"
RSWAP_QUIET=1 bash "$RSWAP_TOP/qemu/run.sh" --out "$out" --timeout 900 qemu/demo.sh
rc=$?
cat "$out/console.log"
exit $rc
