#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Prepares the client guest of tests/host/55-systemd-boot.sh (in a chroot, before
# systemd starts): rswap.ko installed for modprobe, two targets enabled as a user would
# (rswap@NAME.service): swap0 on the server guest, and bad, at a port where nothing
# listens, which must fail without holding up the boot or leaving a target behind.
. /mnt/rswap/tests/systemd/lib.sh
prepare_common client
kver=$(uname -r)
install -D -m 644 "$TOP/rswap.ko" "/lib/modules/$kver/updates/rswap.ko"
# The module index: the host makes it while the guests boot (depmod, which reads every
# module, takes over a minute under TCG); depmod runs here only if the host's failed.
idx=/mnt/out/depmod
for _ in $(seq 1200); do [ -e $idx/done ] || [ -e $idx/failed ] && break; sleep 0.1; done
if [ -e $idx/done ]; then
	cp $idx/modules.* "/lib/modules/$kver/"
	echo "client-prepare: module index from the host"
else
	depmod -a "$kver"
fi
peer=$(arg rswap.peer)
mkdir -p /etc/rswap/targets
( umask 077; echo "$SECRET" > /etc/rswap/swap0.secret )
# 64 MiB: the server maps, locks and registers a new region before it answers, and under
# TCG on a loaded host 256 MiB took it past the connect timeout (15 s); the retries then
# met the abandoned region, held for its grace period (InUse), and swap0 was up after
# 60 s instead of about 20.
cat > /etc/rswap/targets/swap0.conf <<CONF
# The memory server in the other guest.
server = $peer:$PORT
size = 64M
client_id = $CLIENT_ID
secret_file = /etc/rswap/swap0.secret
queues = 2
swap = yes
priority = 10
CONF
cat > /etc/rswap/targets/bad.conf <<CONF
# Nothing listens at this port.
server = $peer:$((PORT + 7))
size = 64M
client_id = 0x5302
swap = yes
CONF
systemctl enable rswap@swap0.service rswap@bad.service
# The disks are numbered in the order they are enabled: bad's attempts come after swap0,
# so that swap0's disk is rswap0.
mkdir -p /etc/systemd/system/rswap@bad.service.d
printf '[Unit]\nAfter=rswap@swap0.service\n' > /etc/systemd/system/rswap@bad.service.d/after-swap0.conf
# bad waits 5 s for its server (tried again every 2 s), not the packaged unit's 60:
# the boot's wait for it is make check's time (tests/host/55-systemd-boot.sh checks the
# packaged values apart).
printf '[Service]\nExecStart=\nExecStart=/usr/sbin/rswapctl up --wait 5 %%i\n' \
	> /etc/systemd/system/rswap@bad.service.d/wait.conf
echo "client-prepare: rswap.ko for $kver, targets swap0 and bad enabled"
