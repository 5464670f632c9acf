#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Prepare a kernel tree that out-of-tree Rust modules for an installed Debian kernel build
# against. Debian's linux-headers packages carry no Rust metadata (rust/*.rmeta), so the
# tree is made from the kernel's source: linux-source-X.Y unpacked, the kernel's own
# .config and Module.symvers from its linux-headers package, the LOCALVERSION that gives
# the same `uname -r`, then `make olddefconfig rustavailable modules_prepare` with the
# compiler named in that .config. That builds rust/ (the kernel crate) with the local
# rustc, which must be the one Debian built the kernel with, or the module's symbols do
# not match the kernel's.
#
#   prepare-kernel.sh KVER TREE [SOURCE-TARBALL [HEADERS-DIR]]
#     KVER      the kernel release, e.g. 7.3.4+deb13-amd64
#     TREE      where the tree goes (made once; a later run with the same inputs only checks)
#     SOURCE    default /usr/src/linux-source-X.Y.tar.* for KVER's X.Y
#     HEADERS   default /usr/src/linux-headers-KVER
#
# Used by scripts/kernel-stock.sh (in the build root) and, installed as
# /usr/lib/rswap-dkms/prepare-kernel, by the rswap-dkms package's DKMS build. Leaves in
# TREE: .rswap-localversion and .rswap-cc (what `make M=...` must be given), and
# .rswap-ready (the inputs' fingerprint) once done. Progress goes to stderr.
set -euo pipefail

die() { printf 'prepare-kernel: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'prepare-kernel: %s\n' "$*" >&2; }

[ $# -ge 2 ] && [ $# -le 4 ] || die "usage: prepare-kernel KVER TREE [SOURCE-TARBALL [HEADERS-DIR]]"
kver=$1 tree=$2
series=$(printf '%s\n' "$kver" | cut -d. -f1,2)
if [ $# -ge 3 ]; then
	src=$3
else
	src=$(ls /usr/src/linux-source-"$series".tar.* 2>/dev/null | head -1) \
		|| die "no /usr/src/linux-source-$series.tar.*: install linux-source-$series"
fi
hdr=${4:-/usr/src/linux-headers-$kver}
[ -f "$src" ] || die "no kernel source tarball $src: install linux-source-$series"
[ -f "$hdr/.config" ] && [ -f "$hdr/Module.symvers" ] \
	|| die "no .config and Module.symvers in $hdr: install linux-headers-$kver"

# The compiler and rustc the kernel was built with, as its .config records them.
cfg() { sed -n "s/^$1=\"\\(.*\\)\"\$/\\1/p" "$hdr/.config"; }
cc=$(cfg CONFIG_CC_VERSION_TEXT | cut -d' ' -f1)
[ -n "$cc" ] || die "$hdr/.config names no compiler (CONFIG_CC_VERSION_TEXT)"
command -v "$cc" >/dev/null || die "the kernel was built with $cc, which is not installed"
grep -qx 'CONFIG_RUST=y' "$hdr/.config" || die "kernel $kver is built without Rust support (CONFIG_RUST)"
want_rustc=$(cfg CONFIG_RUSTC_VERSION_TEXT)
have_rustc=$(rustc --version 2>/dev/null) || die "rustc is not installed"
[ "$have_rustc" = "$want_rustc" ] \
	|| die "kernel $kver was built with '$want_rustc' but rustc here is '$have_rustc'; a module built with another rustc does not load"

# 7.3.4+deb13-amd64 -> 7.3.4 and +deb13-amd64.
version=${kver%%[!0-9.]*}
localversion=${kver#"$version"}

stamp=$( { cat "$hdr/.config" "$hdr/Module.symvers" "$0"; stat -c '%n %s %Y' "$src"; echo "$have_rustc"; } \
	| sha256sum | cut -d' ' -f1)
if [ "$(cat "$tree/.rswap-ready" 2>/dev/null)" = "$stamp" ]; then exit 0; fi

mkdir -p "$(dirname "$tree")"
exec 9>"$tree.lock"
flock 9
# Another run may have finished it while this one waited.
if [ "$(cat "$tree/.rswap-ready" 2>/dev/null)" = "$stamp" ]; then exit 0; fi

say "preparing a kernel tree for $kver in $tree (a few minutes, about 2 GB)"
rm -rf "$tree"
mkdir -p "$tree"
tar -xf "$src" -C "$tree" --strip-components=1
got=$(make -s -C "$tree" kernelversion)
[ "$got" = "$version" ] || die "$src is kernel $got, not $version: install the linux-source-$series that matches $kver"
cp "$hdr/.config" "$tree/.config"
cp "$hdr/Module.symvers" "$tree/Module.symvers"
make -C "$tree" -j"$(nproc)" CC="$cc" HOSTCC="$cc" LOCALVERSION="$localversion" \
	olddefconfig rustavailable modules_prepare >&2 \
	|| die "make modules_prepare failed in $tree"
# olddefconfig drops options whose tools it does not find (pahole for BTF, say): the
# module would still build, but for a kernel configured differently. Say so.
changed=$(diff <(grep '^CONFIG_' "$hdr/.config" | sort) <(grep '^CONFIG_' "$tree/.config" | sort) \
	| sed -n 's/^[<>] //p' | cut -d= -f1 | sort -u | tr '\n' ' ') || true
[ -z "$changed" ] || say "warning: this tree's configuration differs from the kernel's in: $changed"
got=$(make -s -C "$tree" LOCALVERSION="$localversion" kernelrelease)
[ "$got" = "$kver" ] || die "the prepared tree says $got, the kernel is $kver"
echo "$localversion" > "$tree/.rswap-localversion"
echo "$cc" > "$tree/.rswap-cc"
echo "$stamp" > "$tree/.rswap-ready"
say "kernel tree for $kver ready"
