#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
# /init of rswap's tiny initramfs: load the root-disk and 9p modules, mount the root
# image and the 9p shares, and hand over to the guest init from the work tree.
# With rswap.systemd on the command line, systemd is PID 1 instead: the script named by
# rswap.run= first prepares the root (a QEMU snapshot: its writes vanish with the guest)
# in a chroot, e.g. installs rswap and enables units.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
systemd=
! grep -qw rswap.systemd /proc/cmdline || systemd=1
for m in $(cat /lib/modules/load-order); do insmod /lib/modules/$m 2>/dev/null; done
for i in 1 2 3 4 5 6 7 8 9 10; do [ -b /dev/vda ] && break; sleep 0.2; done
mount -t ext4 /dev/vda /newroot || { echo "initramfs: cannot mount /dev/vda"; poweroff -f; }
# The work tree (rswap) and a debug kernel's modules (kmod) are read-only and do not
# change under the guest: read through the guest's page cache (cache=loose), each script,
# library, binary and module the suites use crosses virtio once, not at every open and
# read. The results folder (out), which the host reads, is written through.
for tag in rswap out kmod; do
	if grep -q "rswap.share.$tag" /proc/cmdline; then
		opts=trans=virtio,version=9p2000.L,msize=262144
		[ "$tag" = out ] || opts=$opts,cache=loose
		mount -t 9p -o "$opts" "$tag" "/newroot/mnt/$tag" \
			|| echo "initramfs: cannot mount 9p share $tag"
	fi
done
if [ -n "$systemd" ]; then
	run=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^rswap.run=//p' | tail -1)
	mount -t proc proc /newroot/proc
	mount -t sysfs sysfs /newroot/sys
	mount -t devtmpfs devtmpfs /newroot/dev
	chroot /newroot /bin/bash "/mnt/rswap/$run" \
		|| { echo "initramfs: $run failed"; umount /newroot/proc /newroot/sys /newroot/dev; poweroff -f; }
	umount /newroot/proc /newroot/sys /newroot/dev
fi
umount /proc /sys
mount --move /dev /newroot/dev
if [ -n "$systemd" ]; then
	exec switch_root /newroot /lib/systemd/systemd
fi
exec switch_root /newroot /bin/bash /mnt/rswap/qemu/guest-init.sh
