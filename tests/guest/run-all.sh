#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs inside the guest: every tests/guest/NN-*.sh (or those named as arguments) in turn,
# each printing its own KTAP. A script that dies without finishing its plan is reported
# by the host (scripts/check.sh) as a failure.
cd "$RSWAP_TOP" || exit 1
[ $# -gt 0 ] || set -- tests/guest/[0-9][0-9]-*.sh
# Each suite's limit: 20 minutes, an hour on the debug kernel (57-ec takes over 20
# minutes there).
limit=1200
[[ $(uname -r) != *-rswap-debug ]] || limit=3600
rc=0
for t in "$@"; do
	echo "# rswap-suite-begin: $t"
	start=$(date +%s)
	timeout --kill-after=10 "${RSWAP_TEST_TIMEOUT:-$limit}" bash "$t"
	r=$?
	echo "# rswap-suite-end: $t exit=$r seconds=$(( $(date +%s) - start ))"
	[ $r = 0 ] || rc=1
done
exit $rc
