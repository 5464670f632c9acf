#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install the host packages rswap needs, idempotently. Only Debian's own suites are
# used: bookworm, plus bookworm-backports (pinned low by Debian already) for QEMU 10; on
# another release it installs nothing and names what is missing.
. "$(dirname "$0")/common.sh"

pkgs=(mmdebstrap e2fsprogs busybox-static cpio xz-utils zstd kmod file
      libibverbs-dev librdmacm-dev rdma-core ibverbs-providers
      libclang-dev clang pkg-config python3 iproute2)
bpo_pkgs=(qemu-system-x86)

missing=()
for p in "${pkgs[@]}" "${bpo_pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
need_root
# The sources added below are bookworm's: on another release they would mix suites.
release=$( . /etc/os-release 2>/dev/null && echo "${ID:-?} ${VERSION_CODENAME:-?}" || echo "unknown")
[ "$release" = "debian bookworm" ] \
	|| die "installing the host packages needs Debian 12 (bookworm), this host is '$release': install these yourself (QEMU 10 or later): ${missing[*]}"
log "installing host packages: ${missing[*]}"

src=/etc/apt/sources.list.d/rswap-bookworm-backports.list
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	echo "deb $RSWAP_MIRROR bookworm-backports main" > "$src"
fi
# Backports are priority 100 by default; pin them explicitly anyway so nothing is
# upgraded from them unless named with -t.
cat > /etc/apt/preferences.d/rswap-backports <<'PIN'
Package: *
Pin: release n=bookworm-backports
Pin-Priority: 100
PIN

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || die "apt-get update failed"
apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null \
	|| die "could not install host packages: ${pkgs[*]}"
apt-get install -y -qq --no-install-recommends -t bookworm-backports "${bpo_pkgs[@]}" >/dev/null \
	|| die "could not install ${bpo_pkgs[*]} from bookworm-backports"
log "host packages ready"
