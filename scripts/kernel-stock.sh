#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Prepare (once) a kernel tree that out-of-tree Rust modules for Debian's stock kernel
# build against: linux-source-7.3 with the kernel's own config, its Module.symvers and
# LOCALVERSION, `rust/` rebuilt with Debian's rustc. Prints the tree's path *inside the
# build root* (use it through scripts/inroot.sh).
. "$(dirname "$0")/common.sh"
ROOT=$(bash "$RSWAP_TOP/scripts/buildroot.sh")
kver=$(bash "$RSWAP_TOP/scripts/buildroot.sh" --kver)
hdr=/usr/src/linux-headers-$kver
key=$(cat "$ROOT$hdr/.config" "$RSWAP_TOP/scripts/kernel-stock.sh" | sha256sum | cut -c1-12)
tree=/build/stock-$kver-$key
if [ -f "$ROOT$tree/.rswap-ready" ]; then echo "$tree"; exit 0; fi

log "preparing stock kernel tree $tree (about 3 minutes)"
src=$(ls "$ROOT"/usr/src/linux-source-"$RSWAP_KERNEL_SERIES".tar.* | head -1)
[ -n "$src" ] || die "linux-source-$RSWAP_KERNEL_SERIES tarball missing in the build root"
base=${kver%-"$RSWAP_KERNEL_FLAVOUR"}     # 7.3.4+deb13
localversion=${kver#"${base%%+*}"}        # +deb13-amd64
rm -rf "$ROOT$tree"; mkdir -p "$ROOT$tree"
tar -xf "$src" -C "$ROOT$tree" --strip-components=1
cp "$ROOT$hdr/.config" "$ROOT$tree/.config"
cp "$ROOT$hdr/Module.symvers" "$ROOT$tree/Module.symvers"
bash "$RSWAP_TOP/scripts/inroot.sh" make -C "$tree" -j"$(nproc)" \
	CC=x86_64-linux-gnu-gcc-14 HOSTCC=x86_64-linux-gnu-gcc-14 LOCALVERSION="$localversion" \
	olddefconfig rustavailable modules_prepare >&2 \
	|| die "modules_prepare of the stock kernel tree failed"
got=$(bash "$RSWAP_TOP/scripts/inroot.sh" make -s -C "$tree" LOCALVERSION="$localversion" kernelrelease)
[ "$got" = "$kver" ] || die "prepared tree says $got, the stock kernel is $kver"
echo "$localversion" > "$ROOT$tree/.rswap-localversion"
touch "$ROOT$tree/.rswap-ready"
echo "$tree"
