#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build rswap.ko in the trixie build root against the prepared tree of $KERNEL
# (stock: Debian's 7.3 kernel; debug: rswap's debug kernel). Extra arguments go to make.
#   scripts/build-module.sh [make args...]
. "$(dirname "$0")/common.sh"
case ${KERNEL:-stock} in
stock) kdir=$(bash "$RSWAP_TOP/scripts/kernel-stock.sh")
       lv=$(cat "$(bash "$RSWAP_TOP/scripts/buildroot.sh")$kdir/.rswap-localversion")
       extra=(CC=x86_64-linux-gnu-gcc-14 HOSTCC=x86_64-linux-gnu-gcc-14 LOCALVERSION="$lv") ;;
debug) kdir=$(cat "$(bash "$RSWAP_TOP/scripts/kernel-debug.sh")/tree"); extra=(LLVM=-19) ;;
*) die "KERNEL must be stock or debug" ;;
esac
[ $# -gt 0 ] || set -- M="$RSWAP_TOP" modules
# Objects built for one kernel must not leak into a build for the other.
stamp=$RSWAP_TOP/.rswap-built-for
if [ "$(cat "$stamp" 2>/dev/null)" != "$kdir" ]; then
	make -s -C "$RSWAP_TOP" clean
	echo "$kdir" > "$stamp"
fi
bash "$RSWAP_TOP/scripts/inroot.sh" make -C "$kdir" -j"$(nproc)" "${extra[@]}" "$@"
