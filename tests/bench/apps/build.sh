#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build `make bench-apps`'s own programs (tests/bench/apps/*.c) into DIR, where the guest
# finds them ($RSWAP_OUT): appqsort, appstream and kvload.
#   tests/bench/apps/build.sh DIR
set -e
src=$(cd "$(dirname "$0")" && pwd)
[ $# = 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
mkdir -p "$1"
cc="gcc -O2 -Wall -Wextra -Werror"
$cc -o "$1/appqsort" "$src/qsort.c"
$cc -o "$1/appstream" "$src/stream.c"
$cc -o "$1/kvload" "$src/kvload.c" -lm
