#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make deb`: build the Debian packages rswap-dkms (the module's source for DKMS) and
# rswap-tools (rswap-server, rswapctl, man pages, systemd units, example configuration)
# with debhelper in the trixie build root, then run lintian on them.
#   scripts/deb.sh [--out DIR]    DIR (default results/deb) must be inside the work tree
# Prints the two packages' paths on stdout; lintian's report is in DIR/lintian.txt
# (RSWAP_DEB_LINTIAN=no: no lintian run, no report).
. "$(dirname "$0")/common.sh"
out=$RSWAP_TOP/results/deb
[ "${1:-}" != --out ] || out=$(realpath -m "$2")
case $out/ in "$RSWAP_TOP"/*) ;; *) die "--out must be inside $RSWAP_TOP (the build root sees only the work tree)" ;; esac

ROOT=$(bash "$RSWAP_TOP/scripts/buildroot.sh")
# Release binaries built on the host (the same ones the guest tests run; they need only
# glibc, libibverbs1 and librdmacm1, which trixie has).
bash "$RSWAP_TOP/scripts/build-server.sh" >/dev/null

# 0.1.0 plus the commit: 0.1.0+git20261124.d36137b.
ver=$(sed -n 's/^version = "\(.*\)"/\1/p' "$RSWAP_TOP/tools/rswap-server/Cargo.toml" | head -1)
[ -n "$ver" ] || die "no version in tools/rswap-server/Cargo.toml"
if commit=$(git -C "$RSWAP_TOP" log -1 --format='%cd.%h' --date=format:%Y%m%d 2>/dev/null); then
	ver+=+git$commit
	date=$(git -C "$RSWAP_TOP" log -1 --format=%cD)
	note="Snapshot of rswap at commit $(git -C "$RSWAP_TOP" log -1 --format=%h)."
else
	date=$(date -R)
	note="Snapshot of rswap $ver."
fi

rm -rf "$out"; mkdir -p "$out"
stage=$out/build/rswap-$ver
mkdir -p "$stage/bin" "$stage/scripts" "$stage/packaging"
# The module's sources as the repository has them (no build products).
if git -C "$RSWAP_TOP" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$RSWAP_TOP" ls-files -z -- src Kbuild Makefile | (cd "$RSWAP_TOP" && tar --null -T - -cf -) \
		| tar -xf - -C "$stage"
else
	cp -a "$RSWAP_TOP/src" "$RSWAP_TOP/Kbuild" "$RSWAP_TOP/Makefile" "$stage/"
	find "$stage/src" \( -name '*.o' -o -name '.*.cmd' -o -name '*.d' -o -name '*.rmeta' \
		-o -name 'bindings_generated.rs' -o -name '*.mod' -o -name '*.mod.c' \) -delete
fi
cp "$RSWAP_TOP/tools/rswap-server/target/release/rswap-server" \
	"$RSWAP_TOP/tools/rswapctl/target/release/rswapctl" "$stage/bin/"
cp "$RSWAP_TOP/scripts/prepare-kernel.sh" "$stage/scripts/"
# packaging/systemd and packaging/etc may be empty or absent: debian/rules installs
# whatever units and configuration files there are.
cp -a "$RSWAP_TOP/packaging/." "$stage/packaging/"
cp -a "$RSWAP_TOP/packaging/deb/debian" "$stage/debian"
cat > "$stage/debian/changelog" <<EOT
rswap ($ver) unstable; urgency=medium

  * $note

 -- $(sed -n 's/^Maintainer: //p' "$stage/debian/control")  $date
EOT

log "building rswap-dkms and rswap-tools $ver in the build root"
bash "$RSWAP_TOP/scripts/inroot.sh" sh -c 'cd "$1" && dpkg-buildpackage -b -us -uc' sh "$stage" \
	> "$out/build.log" 2>&1 || { tail -40 "$out/build.log" >&2; die "dpkg-buildpackage failed (see $out/build.log)"; }
mv "$out/build/rswap-dkms_${ver}_all.deb" "$out/build/rswap-tools_${ver}_amd64.deb" "$out/" \
	|| die "dpkg-buildpackage made no rswap-dkms/rswap-tools $ver (see $out/build.log)"

# lintian: errors fail the packages' test (tests/host/70-deb.sh, which lints each package
# itself and so sets RSWAP_DEB_LINTIAN=no); warnings are listed.
if [ "${RSWAP_DEB_LINTIAN:-yes}" != no ]; then
	bash "$RSWAP_TOP/scripts/inroot.sh" lintian --info --display-info "$out/rswap-dkms_${ver}_all.deb" \
		"$out/rswap-tools_${ver}_amd64.deb" > "$out/lintian.txt" 2>&1 || true
	log "lintian: $(grep -c '^E: ' "$out/lintian.txt") errors, $(grep -c '^W: ' "$out/lintian.txt") warnings (see $out/lintian.txt)"
fi
ls "$out"/rswap-*.deb
