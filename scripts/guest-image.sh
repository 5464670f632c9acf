#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build (once) the QEMU guest: a trixie rootfs with the stock trixie-backports kernel,
# rdma-core tools, perftest, fio, nvme-cli, mdadm, redis (the key-value store of `make
# bench-apps`) and systemd (for guests booted with systemd as init, qemu/run.sh
# --systemd; the others never start it), packed into an ext4 image; the kernel's
# uncompressed vmlinux (fast PVH boot under TCG); and a busybox initramfs that loads the
# few modules needed to mount the root and switches to qemu/guest-init.sh (or, with
# rswap.systemd, to systemd).
# Prints the image directory on stdout.
. "$(dirname "$0")/common.sh"

kver=$(bash "$RSWAP_TOP/scripts/buildroot.sh" --kver 2>/dev/null) || {
	bash "$RSWAP_TOP/scripts/buildroot.sh" >/dev/null
	kver=$(bash "$RSWAP_TOP/scripts/buildroot.sh" --kver)
}
pkgs=("linux-image-$kver" linux-base rdma-core ibverbs-providers ibverbs-utils rdmacm-utils
      perftest iproute2 fio nvme-cli mdadm redis-server redis-tools kmod procps util-linux psmisc
      systemd-sysv)
key=$(printf '%s\n' "${pkgs[@]}" "$(cat "$RSWAP_TOP/qemu/initramfs-init.sh")" v1 | sha256sum | cut -c1-12)
IMG=$RSWAP_CACHE/guest-$kver-$key
if [ -f "$IMG/.rswap-ready" ]; then echo "$IMG"; exit 0; fi

need_root
bash "$RSWAP_TOP/scripts/setup-host.sh"
rm -rf "$IMG.tmp"; mkdir -p "$IMG.tmp"
rootfs=$IMG.tmp/rootfs
log "creating guest rootfs for $kver (about 2 minutes)"
# The backports kernel pre-depends on the backports linux-base.
incl=$(IFS=,; echo "${pkgs[*]}" | sed 's/\blinux-base\b/linux-base\/trixie-backports/')
mmdebstrap --variant=minbase --components=main --include="$incl" \
	--customize-hook='echo rswap-guest > "$1/etc/hostname"' \
	--customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*' \
	"$RSWAP_SUITE" "$rootfs" \
	"deb $RSWAP_MIRROR $RSWAP_SUITE main" \
	"deb $RSWAP_MIRROR $RSWAP_SUITE-backports main" >&2 \
	|| die "mmdebstrap of the guest rootfs failed"
mkdir -p "$rootfs/mnt/rswap" "$rootfs/mnt/out" "$rootfs/mnt/kmod"

# Uncompressed vmlinux: find the compressed payload inside the bzImage and unpack it.
bash "$RSWAP_TOP/scripts/extract-vmlinux.sh" "$rootfs/boot/vmlinuz-$kver" > "$IMG.tmp/vmlinux" \
	|| die "could not extract vmlinux from vmlinuz-$kver"
cp "$rootfs/boot/config-$kver" "$IMG.tmp/config"

# Initramfs: busybox + the modules needed to reach the root disk and the 9p shares.
bash "$RSWAP_TOP/scripts/mkinitramfs.sh" "$rootfs/lib/modules/$kver" "$IMG.tmp/initramfs.cpio.gz" \
	|| die "initramfs build failed"

log "packing rootfs into ext4"
size_mb=$(( $(du -sm "$rootfs" | cut -f1) + 600 ))
mkfs.ext4 -q -L rswaproot -d "$rootfs" "$IMG.tmp/rootfs.ext4" "${size_mb}M" \
	|| die "mkfs.ext4 -d failed"
rm -rf "$rootfs"
echo "$kver" > "$IMG.tmp/kver"
touch "$IMG.tmp/.rswap-ready"
mv "$IMG.tmp" "$IMG"
echo "$IMG"
