#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest itself works: kernel, rxe, the shares.
. "$RSWAP_TOP/tests/lib/guest.sh"
ktap_plan 2
ktap_check "guest: out share is writable" touch "$RSWAP_OUT/.probe"
ktap_check "guest: the RDMA device $RDMA_DEV comes up on eth0" rdma_up
ktap_finish
