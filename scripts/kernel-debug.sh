#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build (once) rswap's debug kernel: the same linux-source and toolchain as the stock
# kernel, tinyconfig + qemu/debug.config (KASAN, lockdep, DEBUG_ATOMIC_SLEEP, KUnit; the
# RDMA, block, swap and NVMe-oF pieces as modules). Takes 25-90 minutes on 2 cores.
# Prints a host directory with vmlinux, modroot/ (installed modules) and `tree`, the
# build tree's path inside the build root (the KDIR for rswap.ko).
. "$(dirname "$0")/common.sh"
ROOT=$(bash "$RSWAP_TOP/scripts/buildroot.sh")
src=$(ls "$ROOT"/usr/src/linux-source-"$RSWAP_KERNEL_SERIES".tar.* | head -1)
key=$(cat "$RSWAP_TOP/qemu/debug.config" "$src" | sha256sum | cut -c1-12)
tree=/build/debug-$RSWAP_KERNEL_SERIES-$key
out=$RSWAP_CACHE/debug-kernel-$key
if [ -f "$out/.rswap-ready" ]; then echo "$out"; exit 0; fi

srcdir=/build/linux-source-$RSWAP_KERNEL_SERIES
if [ ! -f "$ROOT$srcdir/.rswap-unpacked" ]; then
	log "unpacking linux-source-$RSWAP_KERNEL_SERIES"
	rm -rf "$ROOT$srcdir"; mkdir -p "$ROOT$srcdir"
	tar -xf "$src" -C "$ROOT$srcdir" --strip-components=1
	touch "$ROOT$srcdir/.rswap-unpacked"
fi
mk=(make -C "$srcdir" O="$tree" LLVM=-19)
inroot() { bash "$RSWAP_TOP/scripts/inroot.sh" "$@"; }
# A changed qemu/debug.config starts from the newest earlier build's tree: configured
# again below, kbuild then rebuilds only what the changed options touch (and the Rust
# crates, whose commands name the tree), minutes instead of the whole kernel.
if [ ! -d "$ROOT$tree" ]; then
	prev=$(ls -td "$ROOT/build/debug-$RSWAP_KERNEL_SERIES"-*/ 2>/dev/null | head -1 || true)
	if [ -n "$prev" ] && [ -f "$prev/vmlinux" ]; then
		log "starting the debug kernel from ${prev%/}"
		cp -a "${prev%/}" "$ROOT$tree.tmp" && rm -f "$ROOT$tree.tmp/.rswap-configured" \
			&& mv "$ROOT$tree.tmp" "$ROOT$tree" || rm -rf "$ROOT$tree.tmp"
	fi
fi
mkdir -p "$ROOT$tree"
if [ ! -f "$ROOT$tree/.rswap-configured" ]; then
	log "configuring the debug kernel in $tree"
	inroot "${mk[@]}" tinyconfig >&2
	cp "$RSWAP_TOP/qemu/debug.config" "$ROOT$tree/rswap-debug.config"
	inroot bash -c "cd $tree && $srcdir/scripts/kconfig/merge_config.sh -m -O $tree .config rswap-debug.config" >&2
	inroot "${mk[@]}" olddefconfig >&2
	# Every line of the fragment must have landed; Kconfig drops unmet ones silently.
	missing=$(grep -E '^CONFIG_[A-Z0-9_]+=' "$RSWAP_TOP/qemu/debug.config" | while read -r l; do
		grep -qxF "$l" "$ROOT$tree/.config" || echo "$l"; done)
	[ -z "$missing" ] || die "debug config did not take: $(echo $missing)"
	touch "$ROOT$tree/.rswap-configured"
fi
log "building the debug kernel (long: KASAN + lockdep + Rust)"
inroot "${mk[@]}" -j"$(nproc)" vmlinux modules >&2 || die "debug kernel build failed"
rm -rf "$ROOT$tree/modroot"
inroot "${mk[@]}" INSTALL_MOD_PATH="$tree/modroot" modules_install >&2 || die "modules_install failed"
rm -rf "$out.tmp"; mkdir -p "$out.tmp"
cp "$ROOT$tree/vmlinux" "$out.tmp/vmlinux"
cp -a "$ROOT$tree/modroot" "$out.tmp/modroot"
echo "$tree" > "$out.tmp/tree"
touch "$out.tmp/.rswap-ready"
rm -rf "$out"; mv "$out.tmp" "$out"
# Earlier builds' trees and kernels are not used again (a tree is 800 MiB).
for old in "$ROOT/build/debug-$RSWAP_KERNEL_SERIES"-* "$RSWAP_CACHE"/debug-kernel-*; do
	[ "$old" = "$ROOT$tree" ] || [ "$old" = "$out" ] || rm -rf "$old"
done
echo "$out"
