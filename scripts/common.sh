# SPDX-License-Identifier: GPL-2.0
# Shared settings for rswap's scripts. Source it; do not run it.
#
# Everything expensive lives under $RSWAP_CACHE (default ~/.cache/rswap), keyed by
# version and configuration, so a second run reuses it and the work tree stays clean.

set -euo pipefail

RSWAP_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RSWAP_CACHE=${RSWAP_CACHE:-$HOME/.cache/rswap}

# The one place the target kernel is pinned. When this exact version has left the
# archive, scripts/buildroot.sh falls back to the newest 7.3.x it can find and says so.
RSWAP_KERNEL_PIN=${RSWAP_KERNEL_PIN:-7.3.4+deb13}
RSWAP_KERNEL_SERIES=7.3
RSWAP_KERNEL_FLAVOUR=amd64

# The suite the target kernel and its toolchain come from.
RSWAP_SUITE=trixie
RSWAP_MIRROR=${RSWAP_MIRROR:-http://deb.debian.org/debian}

log() { printf '[rswap %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { printf 'rswap: error: %s\n' "$*" >&2; exit 1; }

# Hash of files/strings, used as a cache key.
cache_key() { cat "$@" | sha256sum | cut -c1-12; }

need_root() { [ "$(id -u)" = 0 ] || die "this step needs root (it installs packages / builds a chroot)"; }
