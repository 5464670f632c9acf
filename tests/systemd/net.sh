#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rswap-test-net.service of the systemd-booted test guests (installed as
# /usr/local/sbin/rswap-test-net): `up` gives eth0 the address of rswap.ip= and creates
# soft-RoCE rxe0 on it; `down`, at shutdown, first writes to the kernel log (and so to
# the console) how many rswap swap areas and targets are still there, then takes both
# down.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
arg() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^$1=//p" | tail -1; }
kmsg() { echo "rswap-test: $*" > /dev/kmsg; }
case ${1:-} in
up)
	ip link set lo up
	ip addr add "$(arg rswap.ip)" dev eth0
	ip link set eth0 up
	modprobe rdma_rxe && modprobe -a ib_uverbs rdma_ucm || exit 1
	rdma link add rxe0 type rxe netdev eth0 || exit 1
	for _ in $(seq 200); do
		rdma link show | grep -q '^link rxe0/.* state ACTIVE' && break
		sleep 0.1
	done
	kmsg "network up: $(rdma link show | grep '^link rxe0/')"
	;;
down)
	swaps=$(grep -c '^/dev/rswap' /proc/swaps)
	targets=$(find /sys/kernel/config/rswap -mindepth 1 -maxdepth 1 -type d -printf '%f ' 2>/dev/null)
	kmsg "network going down: rswap swap areas active: $swaps; rswap targets: ${targets:-none}"
	rdma link delete rxe0
	ip link set eth0 down
	;;
*) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
