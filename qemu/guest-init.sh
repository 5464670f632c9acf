#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# PID 1 of an rswap test guest. Mounts the usual file systems, configures eth0 from the
# kernel command line, runs the script named by rswap.run= (a path in the work tree,
# shared at /mnt/rswap) with its output on the console and in /mnt/out/console.log,
# stores its exit code in /mnt/out/exit-code, and powers off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t configfs configfs /sys/kernel/config 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null

arg() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^$1=//p" | tail -1; }
hostname "$(arg rswap.host || echo rswap-guest)"

# A debug kernel's modules come over the kmod share.
kver=$(uname -r)
if [ ! -d "/lib/modules/$kver" ] && [ -d "/mnt/kmod/lib/modules/$kver" ]; then
	mkdir -p "/lib/modules/$kver"
	mount --bind "/mnt/kmod/lib/modules/$kver" "/lib/modules/$kver"
fi

ip link set lo up
ip_addr=$(arg rswap.ip)
if [ -n "$ip_addr" ] && ip link show eth0 >/dev/null 2>&1; then
	ip addr add "$ip_addr" dev eth0
	ip link set eth0 up
fi
export RSWAP_GUEST_IP=${ip_addr%/*} RSWAP_PEER_IP=$(arg rswap.peer)
export RSWAP_ROLE=$(arg rswap.role) RSWAP_OUT=/mnt/out RSWAP_TOP=/mnt/rswap
# The RDMA device type the suites use (tests/lib/guest.sh): rxe unless rswap.rdma= says.
export RSWAP_RDMA=$(arg rswap.rdma)
# Each KTAP test's seconds (tests/lib/ktap.sh), for finding where a run's time goes.
export KTAP_TIMES=/mnt/out/test-seconds.tsv

script=$(arg rswap.run)
args=$(arg rswap.args | tr ',' ' ')
cd /mnt/rswap
echo "rswap-guest: kernel $kver, running $script $args"
# shellcheck disable=SC2086
bash "$script" $args 2>&1 | tee /mnt/out/console.log
rc=${PIPESTATUS[0]}
dmesg > /mnt/out/dmesg.log
echo "$rc" > /mnt/out/exit-code
sync
echo "rswap-guest: done (exit $rc)"
# No init system to ask: power off through sysrq; should that hang, reboot (QEMU runs
# with -no-reboot, so a reboot ends it too).
echo o > /proc/sysrq-trigger 2>/dev/null
sleep 10
echo b > /proc/sysrq-trigger 2>/dev/null
