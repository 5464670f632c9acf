#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The memory-server guest of a two-guest run: soft-RoCE on eth0 and rswap-server on it,
# until the host stops the guest (after the client guest has finished).
. "$RSWAP_TOP/tests/lib/guest.sh"
rxe_up || { echo "server guest: soft-RoCE unavailable"; exit 1; }
exec "$RSWAP_TOP/tools/rswap-server/target/release/rswap-server" \
	--listen "$RSWAP_GUEST_IP:18515" --size 512M --grace 300
