#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Create (once) the trixie build root: the exact toolchain Debian built its 7.3 kernel
# with (rustc 1.85, rust-src, bindgen 0.71, gcc-14, libclang-19) plus linux-source-7.3 and
# the matching linux-headers. Prints the build root's path on stdout.
#
#   scripts/buildroot.sh            create if missing, print path
#   scripts/buildroot.sh --kver     print the resolved kernel ABI version (e.g. 7.3.4+deb13-amd64)
. "$(dirname "$0")/common.sh"

pkgs=(build-essential gcc-14 make flex bison bc libelf-dev libssl-dev cpio kmod dwarves
      python3 xz-utils zstd rsync ca-certificates
      rustc rust-src rustfmt rust-clippy bindgen libclang-19-dev)
key=$(printf '%s\n' "${pkgs[@]}" "$RSWAP_SUITE" "$RSWAP_KERNEL_SERIES" "$RSWAP_KERNEL_PIN" v1 | sha256sum | cut -c1-12)
ROOT=$RSWAP_CACHE/buildroot-$RSWAP_SUITE-$key

if [ "${1:-}" = --kver ]; then
	[ -f "$ROOT/.rswap-ready" ] || die "build root missing: run scripts/buildroot.sh"
	cat "$ROOT/rswap-kver"; exit 0
fi

# Packages added after the base was made: installed on demand, so adding one does not
# throw away the build root and the kernel trees in it.
# dpkg-dev and below: `make deb` (scripts/deb.sh) builds and lints the packages here.
extra=(clang-19 lld-19 llvm-19 debhelper dh-dkms lintian help2man libibverbs1 librdmacm1t64)
ensure_extra() {
	local missing=() p
	for p in "${extra[@]}"; do
		chroot "$1" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
			|| missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	need_root
	log "installing ${missing[*]} into the build root"
	cp /etc/resolv.conf "$1/etc/resolv.conf" 2>/dev/null || true
	chroot "$1" apt-get update -qq >&2
	chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >&2 || die "could not install ${missing[*]} in the build root"
}

if [ -f "$ROOT/.rswap-ready" ]; then
	ensure_extra "$ROOT"
	echo "$ROOT"; exit 0
fi

need_root
bash "$RSWAP_TOP/scripts/setup-host.sh"
mkdir -p "$RSWAP_CACHE"
if [ ! -f "$ROOT.tmp/.rswap-base" ]; then
rm -rf "$ROOT.tmp"
log "creating $RSWAP_SUITE build root (about 3 minutes) in $ROOT"
mmdebstrap --variant=apt --components=main --include="$(IFS=,; echo "${pkgs[*]}")" \
	"$RSWAP_SUITE" "$ROOT.tmp" \
	"deb $RSWAP_MIRROR $RSWAP_SUITE main" \
	"deb $RSWAP_MIRROR $RSWAP_SUITE-backports main" >&2 \
	|| die "mmdebstrap of the $RSWAP_SUITE build root failed"
touch "$ROOT.tmp/.rswap-base"
fi
cp /etc/resolv.conf "$ROOT.tmp/etc/resolv.conf" 2>/dev/null || true
chroot "$ROOT.tmp" apt-get update -qq >&2 || die "apt-get update in the build root failed"

# Resolve the kernel version: the pin if the archive still has it, else the newest 7.3.x.
want="$RSWAP_KERNEL_PIN-$RSWAP_KERNEL_FLAVOUR"
if chroot "$ROOT.tmp" apt-cache show "linux-headers-$want" >/dev/null 2>&1; then
	kver=$want
else
	kver=$(chroot "$ROOT.tmp" apt-cache pkgnames "linux-headers-$RSWAP_KERNEL_SERIES." \
		| grep -E -- "-$RSWAP_KERNEL_FLAVOUR\$" | sed 's/^linux-headers-//' | sort -V | tail -1)
	[ -n "$kver" ] || die "no linux-headers-$RSWAP_KERNEL_SERIES.x-$RSWAP_KERNEL_FLAVOUR in $RSWAP_SUITE-backports"
	log "pinned kernel $want is gone from the archive; falling back to $kver"
fi
log "installing linux-source-$RSWAP_KERNEL_SERIES and linux-headers-$kver"
chroot "$ROOT.tmp" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	-t "$RSWAP_SUITE-backports" "linux-source-$RSWAP_KERNEL_SERIES" "linux-headers-$kver" >&2 \
	|| die "could not install linux-source-$RSWAP_KERNEL_SERIES / linux-headers-$kver"
echo "$kver" > "$ROOT.tmp/rswap-kver"
ensure_extra "$ROOT.tmp"
chroot "$ROOT.tmp" rustc --version >&2
chroot "$ROOT.tmp" bindgen --version >&2
touch "$ROOT.tmp/.rswap-ready"
mv "$ROOT.tmp" "$ROOT"
echo "$ROOT"
