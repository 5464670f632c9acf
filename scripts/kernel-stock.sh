#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Prepare (once) a kernel tree that out-of-tree Rust modules for Debian's stock kernel
# build against: linux-source-7.3 with the kernel's own config, its Module.symvers and
# LOCALVERSION, `rust/` rebuilt with Debian's rustc (scripts/prepare-kernel.sh, run in the
# build root). Prints the tree's path *inside the build root* (use it through
# scripts/inroot.sh).
. "$(dirname "$0")/common.sh"
ROOT=$(bash "$RSWAP_TOP/scripts/buildroot.sh")
kver=$(bash "$RSWAP_TOP/scripts/buildroot.sh" --kver)
hdr=/usr/src/linux-headers-$kver
key=$(cat "$ROOT$hdr/.config" "$RSWAP_TOP/scripts/prepare-kernel.sh" | sha256sum | cut -c1-12)
tree=/build/stock-$kver-$key
if [ -f "$ROOT$tree/.rswap-ready" ]; then echo "$tree"; exit 0; fi

# The same script the rswap-dkms package runs at install (packaging/deb).
log "preparing stock kernel tree $tree (about 3 minutes)"
src=$(ls "$ROOT"/usr/src/linux-source-"$RSWAP_KERNEL_SERIES".tar.* | head -1)
[ -n "$src" ] || die "linux-source-$RSWAP_KERNEL_SERIES tarball missing in the build root"
bash "$RSWAP_TOP/scripts/inroot.sh" bash scripts/prepare-kernel.sh "$kver" "$tree" \
	"${src#"$ROOT"}" "$hdr" || die "preparing the stock kernel tree failed"
echo "$tree"
