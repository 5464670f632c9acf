#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest itself works: kernel, rxe, the shares.
. "$RSWAP_TOP/tests/lib/guest.sh"
ktap_test "guest: out share is writable" ktap_check touch "$RSWAP_OUT/.probe"
ktap_test "guest: the RDMA device $RDMA_DEV comes up on eth0" ktap_check rdma_up
ktap_run
