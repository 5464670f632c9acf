#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Prepares the server guest of tests/host/55-systemd-boot.sh (in a chroot, before
# systemd starts): the packaged rswap-server.service enabled, with /etc/rswap/server.conf
# and an allow-list that holds the client guest's id and secret.
. /mnt/rswap/tests/systemd/lib.sh
prepare_common server
ip=$(arg rswap.ip)
cat > /etc/rswap/server.conf <<CONF
RSWAP_SERVER_OPTS="--listen ${ip%/*}:$PORT --size 512M --allow-list /etc/rswap/allow-list --state-dir /run/rswap/state --status-socket /run/rswap/server.sock --grace 30"
CONF
( umask 077; echo "$CLIENT_ID $SECRET $(arg rswap.peer)" > /etc/rswap/allow-list )
systemctl enable rswap-server.service
echo "server-prepare: rswap-server.service enabled on ${ip%/*}:$PORT"
