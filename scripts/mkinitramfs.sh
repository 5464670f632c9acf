#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the tiny initramfs: static busybox, qemu/initramfs-init.sh as /init, and the
# modules (with their dependencies, decompressed) that mounting the root disk and the
# 9p shares needs.
#   scripts/mkinitramfs.sh MODULE_DIR OUT.cpio.gz
. "$(dirname "$0")/common.sh"
moddir=$1 out=$2
wanted=(virtio_pci virtio_blk virtio_net ext4 9p 9pnet_virtio crc32c_generic)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{bin,dev,proc,sys,newroot,lib/modules}
cp /bin/busybox "$work/bin/busybox"
cp "$RSWAP_TOP/qemu/initramfs-init.sh" "$work/init"; chmod +x "$work/init"

# Resolve dependencies with modules.dep; emit load order (dependencies first).
declare -A seen=()
order=()
visit() {
	local mod=$1 line path dep
	line=$(grep -E "(^|/)${mod//_/[-_]}\.ko(\.[a-z]+)?:" "$moddir/modules.dep" || true)
	[ -n "$line" ] || return 0        # built in, or not present
	path=${line%%:*}
	[ -z "${seen[$path]:-}" ] || return 0
	seen[$path]=1
	for dep in ${line#*:}; do
		visit "$(basename "$dep" | sed -E 's/\.ko(\.[a-z]+)?$//')"
	done
	order+=("$path")
}
for m in "${wanted[@]}"; do visit "$m"; done
: > "$work/lib/modules/load-order"
for path in "${order[@]}"; do
	name=$(basename "$path" | sed -E 's/\.(xz|zst|gz)$//')
	case "$path" in
	*.xz) xz -dc "$moddir/$path" ;; *.zst) zstd -qdc "$moddir/$path" ;;
	*.gz) gzip -dc "$moddir/$path" ;; *) cat "$moddir/$path" ;;
	esac > "$work/lib/modules/$name"
	echo "$name" >> "$work/lib/modules/load-order"
done
(cd "$work" && find . | cpio -o -H newc --quiet | gzip -1) > "$out"
