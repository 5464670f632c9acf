#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The demo, inside the guest: soft-RoCE, rswap following the RDMA device, a memory
# server, /dev/rswap0 through configfs, and swap to remote memory.
. "$RSWAP_TOP/tests/lib/guest.sh"
IP=$RSWAP_GUEST_IP
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; eval "$@"; }

say "1. soft-RoCE: an RDMA device on eth0"
run "modprobe -a rdma_rxe ib_uverbs rdma_ucm"
run "rdma link add rxe0 type rxe netdev eth0"
run "rdma link show"

say "2. rswap follows RDMA devices (its IB client allocated a PD and a CQ on rxe0)"
run "modprobe -a ib_core rdma_cm && insmod $RSWAP_TOP/rswap.ko"
run "dmesg | grep 'rswap:'"
run "rdma resource show pd | grep rswap"

say "3. a memory server hands out 256 MiB of registered memory to the clients it knows"
SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
run "(umask 077; echo 0xd3e0 \$SECRET > /tmp/clients)"
"$RSWAP_TOP/tools/rswap-server/target/release/rswap-server" --listen "$IP:7471" --size 512M \
	--allow-list /tmp/clients > /tmp/server.log 2>&1 &
sleep 1
run "cat /tmp/server.log"

say "4. configfs: connect and create /dev/rswap0"
T=/sys/kernel/config/rswap/demo
run "mkdir $T"
run "echo $IP > $T/addr; echo 7471 > $T/port; echo 256M > $T/size; echo 2 > $T/queues"
run "echo 0xd3e0 > $T/client_id; echo \$SECRET > $T/secret; cat $T/secret"
run "echo 1 > $T/enable"
run "cat $T/state $T/device"
run "lsblk /dev/rswap0"

say "5. remote swap: a 64 MiB cgroup touches 128 MiB"
run "mkswap /dev/rswap0 >/dev/null && swapon -p 100 /dev/rswap0 && cat /proc/swaps"
echo +memory > /sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/demo; echo 64M > /sys/fs/cgroup/demo/memory.max
before=$(awk '$1 == "pswpout" { print $2 }' /proc/vmstat)
if [ -x "$RSWAP_OUT/swapload" ]; then
	run "sh -c 'echo \$\$ > /sys/fs/cgroup/demo/cgroup.procs; exec $RSWAP_OUT/swapload 128 1'"
fi
run "grep -E '^(pswpin|pswpout) ' /proc/vmstat"
echo "pages swapped out to remote memory during the demo: $(( $(awk '$1 == "pswpout" { print $2 }' /proc/vmstat) - before ))"

say "6. tear down"
run "swapoff /dev/rswap0; echo 0 > $T/enable; rmdir $T; rmmod rswap; rdma link delete $RDMA_DEV"
run "dmesg | grep 'rswap:' | tail -4"
