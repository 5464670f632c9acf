#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The Debian packages: `make deb`, lintian, then an install into a fresh trixie root
# (mmdebstrap) where apt resolves the packages' Depends and DKMS builds rswap.ko for the
# stock kernel, a purge, and a boot of the stock guest that loads that DKMS-built
# rswap.ko and drives it with the packaged rswap-server and rswapctl
# (tests/guest-deb/load.sh). Prints KTAP for scripts/check.sh.
#   tests/host/70-deb.sh [--out DIR] [--guest-after FILE]
#     --guest-after FILE  boot the guest only once FILE exists: make check runs the host
#                         part (the packages, lintian, apt and DKMS) beside its other
#                         guests, and this guest after them
# Downloaded packages and the clean root (a tarball, made once a week) are kept in
# $RSWAP_CACHE/deb-test-apt-trixie/; the root is unpacked anew every run and removed at
# the end.
. "$(dirname "$0")/../../scripts/common.sh"
. "$RSWAP_TOP/tests/lib/ktap.sh"
out=$RSWAP_TOP/results/deb-test
gate=
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$(realpath -m "$2"); shift 2 ;;
	--guest-after) gate=$2; shift 2 ;;
	*) die "unknown option $1" ;;
	esac
done
rm -rf "$out"; mkdir -p "$out"
start=$(date +%s)

kver=$(bash "$RSWAP_TOP/scripts/buildroot.sh" --kver 2>/dev/null) || {
	bash "$RSWAP_TOP/scripts/buildroot.sh" >/dev/null
	kver=$(bash "$RSWAP_TOP/scripts/buildroot.sh" --kver)
}
cache=$RSWAP_CACHE/deb-test-apt-$RSWAP_SUITE
mkdir -p "$cache/base" "$cache/install"
root=
cleanup() { [ -z "$root" ] || rm -rf --one-file-system "$root"; }
trap cleanup EXIT

t_make_deb() {
	log "make deb"
	debs=()
	# Without make deb's own lintian run: the lintian tests lint each package.
	if RSWAP_DEB_LINTIAN=no make -s -C "$RSWAP_TOP" deb > "$out/make-deb.log" 2>&1; then
		mapfile -t debs < <(grep -E '/rswap-(dkms|tools)_.*\.deb$' "$out/make-deb.log")
	fi
	if [ "${#debs[@]}" = 2 ] && [ -f "${debs[0]}" ] && [ -f "${debs[1]}" ]; then
		ktap_pass
		ktap_diag "${debs[@]##*/}"
	else
		ktap_fail "$(tail -20 "$out/make-deb.log")"
		ktap_skip_rest "make deb failed"
	fi
	dkms_deb=$(printf '%s\n' "${debs[@]}" | grep /rswap-dkms_)
	tools_deb=$(printf '%s\n' "${debs[@]}" | grep /rswap-tools_)
	ver=$(dpkg-deb -f "$dkms_deb" Version)
	cp "$dkms_deb" "$tools_deb" "$out/"
}
ktap_test "make deb builds rswap-dkms and rswap-tools" t_make_deb

# lintian PACKAGE (in the build root: trixie's lintian), of the debs the test before made
t_lintian() {
	local d name lrc e w
	if [ "$1" = rswap-dkms ]; then d=$dkms_deb; else d=$tools_deb; fi
	name=$(dpkg-deb -f "$d" Package)
	lrc=0
	bash "$RSWAP_TOP/scripts/inroot.sh" lintian "$d" > "$out/lintian-$name.txt" 2>&1 || lrc=$?
	e=$(grep -c '^E: ' "$out/lintian-$name.txt" || true)
	w=$(grep -c '^W: ' "$out/lintian-$name.txt" || true)
	if [ "$e" = 0 ] && [ "$w" = 0 ] && [ $lrc = 0 ]; then
		ktap_pass; ktap_diag "lintian $name: $e errors, $w warnings"
	else
		ktap_fail "lintian exit $lrc: $(grep -v '^running with' "$out/lintian-$name.txt" | head -20)"
	fi
}
ktap_test "lintian: rswap-dkms has no errors and no warnings" t_lintian rswap-dkms
ktap_test "lintian: rswap-tools has no errors and no warnings (an override says why swap.target)" t_lintian rswap-tools

# inchroot CMD...: CMD in the root with /proc and /dev mounted, in a mount namespace of
# its own (the mounts vanish with it).
inchroot() {
	unshare --mount --propagation private -- bash -c '
		set -e
		root=$1; shift
		mount -t proc proc "$root/proc"
		mount --rbind /dev "$root/dev"
		exec chroot "$root" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
			DEBIAN_FRONTEND=noninteractive "$@"
	' bash "$root" "$@"
}
# The downloaded packages: copied (hard links where they can be) into the root's own
# archive before the install and the new ones back after it, not the cache mounted as
# the root's archive, whose lock made a second run at the same time (another work tree
# on this host, the same cache) fail its install ("Could not get lock
# /var/cache/apt/archives/lock").
debs_in() {
	find "$cache/install" -maxdepth 1 -name '*.deb' -exec cp -l -t "$root/var/cache/apt/archives/" {} + \
		2>/dev/null || find "$cache/install" -maxdepth 1 -name '*.deb' -exec cp -t "$root/var/cache/apt/archives/" {} +
}
debs_out() {
	local f
	for f in "$root"/var/cache/apt/archives/*.deb; do
		[ -f "$f" ] && [ ! -e "$cache/install/${f##*/}" ] || continue
		cp "$f" "$cache/install/.${f##*/}.tmp" && mv "$cache/install/.${f##*/}.tmp" "$cache/install/${f##*/}"
	done
}

# A fresh trixie root ($root, which the tests after use up to the purge), then apt
# installs the kernel's headers and both packages.
t_install() {
	root=$(mktemp -d /var/tmp/rswap-deb-root.XXXXXX)
	log "creating a clean $RSWAP_SUITE root in $root"
	t0=$(date +%s)
	# The clean root is mmdebstrap's (variant apt), kept for a week as a tarball in the
	# cache: a run unpacks it into the new directory instead, the same root without a
	# minute of dpkg (apt-get update then brings its package lists up to date).
	local base
	base=$cache/root-$(printf '%s\n' "$RSWAP_SUITE" "$RSWAP_MIRROR" v1 | sha256sum | cut -c1-12)-$(date -u +%G-w%V).tar
	ok=0 made=0
	if [ -f "$base" ]; then
		echo "the root unpacked from $base" > "$out/mmdebstrap.log"
		tar -xf "$base" -C "$root" >> "$out/mmdebstrap.log" 2>&1 && made=1
	elif mmdebstrap --variant=apt --components=main --skip=essential/unlink \
		--setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
		--setup-hook="sync-in $cache/base /var/cache/apt/archives/" \
		--customize-hook="sync-out /var/cache/apt/archives $cache/base" \
		"$RSWAP_SUITE" "$root" \
		"deb $RSWAP_MIRROR $RSWAP_SUITE main" \
		"deb $RSWAP_MIRROR $RSWAP_SUITE-backports main" > "$out/mmdebstrap.log" 2>&1; then
		made=1
		for f in "$cache"/root-*.tar; do [ "$f" = "$base" ] || rm -f "$f"; done
		tar -cf "$base.$$.tmp" -C "$root" . && mv -f "$base.$$.tmp" "$base" || rm -f "$base.$$.tmp"
	fi
	if [ $made = 1 ]; then
		cp /etc/resolv.conf "$root/etc/resolv.conf"
		# dpkg without an fsync of every file it unpacks: the root is thrown away after,
		# and this suite runs beside the guests, on the disk they write to.
		echo force-unsafe-io > "$root/etc/dpkg/dpkg.cfg.d/rswap-test-unsafe-io"
		cp "$dkms_deb" "$tools_deb" "$root/tmp/"
		log "installing linux-headers-$kver, rswap-dkms and rswap-tools (DKMS prepares a kernel tree: minutes)"
		t1=$(date +%s)
		debs_in
		if inchroot apt-get update -q > "$out/apt-install.log" 2>&1 \
			&& inchroot apt-get install -y -q --no-install-recommends "linux-headers-$kver" \
				"/tmp/${dkms_deb##*/}" "/tmp/${tools_deb##*/}" >> "$out/apt-install.log" 2>&1; then
			ok=1
		fi
		debs_out
		t2=$(date +%s)
	fi
	if [ $ok = 1 ] && [ "$(inchroot dpkg-query -W -f='${Status}' rswap-dkms rswap-tools 2>&1)" \
		= "install ok installedinstall ok installed" ]; then
		ktap_pass
		ktap_diag "root $((t1 - t0)) s; apt-get install with DKMS $((t2 - t1)) s"
	else
		# apt's errors first (the summary of make check keeps a failure's first lines).
		ktap_fail "$({ grep -E '^(E|Err|W):' "$out/apt-install.log" | head -8
			tail -30 "$out/apt-install.log"; } 2>/dev/null || tail -20 "$out/mmdebstrap.log")"
		cp -a "$root/var/lib/dkms/rswap" "$out/dkms-tree" 2>/dev/null || true
		ktap_skip_rest "the packages did not install"
	fi
}
ktap_test "clean $RSWAP_SUITE root: apt installs linux-headers-$kver, rswap-dkms and rswap-tools with their Depends" t_install

t_dkms_status() {
	# DKMS keeps the build's log with the built module.
	mk=$(find "$root/var/lib/dkms/rswap/$ver" -name make.log 2>/dev/null | head -1)
	[ -z "$mk" ] || cp "$mk" "$out/dkms-make.log"
	st=$(inchroot dkms status -m rswap -v "$ver" -k "$kver" 2>&1 || true)
	ktap_diag "dkms status: $st"
	warn=$(grep 'prepare-kernel: warning' "$out/dkms-make.log" 2>/dev/null || true)
	if grep -qxF "rswap/$ver, $kver, x86_64: installed" <<<"$st" && [ -s "$out/dkms-make.log" ] && [ -z "$warn" ]; then
		ktap_pass
	else
		ktap_fail "$warn $(tail -20 "$out/dkms-make.log" 2>/dev/null)"
	fi
}
ktap_test "dkms status: rswap installed for $kver; the prepared tree kept the kernel's configuration" t_dkms_status

# the module DKMS installed (compressed like the kernel's own, if it is), kept for the
# guest tests in $out/vm
t_vermagic() {
	mkdir -p "$out/vm"
	ko=$(find "$root/lib/modules/$kver/updates" -name 'rswap.ko*' 2>/dev/null | head -1)
	case $ko in
	*.ko.xz) xz -dc "$ko" > "$out/vm/rswap.ko" ;;
	*.ko.zst) zstd -qdc "$ko" > "$out/vm/rswap.ko" ;;
	*.ko) cp "$ko" "$out/vm/rswap.ko" ;;
	esac
	vm=$(modinfo -F vermagic "$out/vm/rswap.ko" 2>&1 || true)
	# A module built to be installed has no fault-injection parameter (make check builds
	# its own with RSWAP_FAULT_INJECTION=y).
	params=$(modinfo -F parm "$out/vm/rswap.ko" 2>&1 || true)
	# Its version is the package's (without the snapshot's +git suffix).
	mv=$(modinfo -F version "$out/vm/rswap.ko" 2>&1 || true)
	if [[ $vm == "$kver "* ]] && [ -n "$params" ] && ! grep -q '^fault_' <<<"$params" \
		&& [ "$mv" = "${ver%%+*}" ]; then
		ktap_pass; ktap_diag "${ko#"$root"}: $vm; version $mv; parameters: $(cut -d: -f1 <<<"$params" | tr '\n' ' ')"
	else
		ktap_fail "module '${ko#"$root"}': $vm; version '$mv' (package $ver); parameters: $params"
	fi
}
ktap_test "the DKMS-built rswap.ko has vermagic $kver, the package's version and no fault-injection parameter" t_vermagic

# the tools package's files; sets $tv, the version the guest tests expect
t_tools() {
	bad=
	tv=$(dpkg-deb -f "$tools_deb" Version); tv=${tv%%+*}
	[[ $(inchroot rswap-server --version 2>&1) == "rswap-server $tv "* ]] || bad+="rswap-server --version: $(inchroot rswap-server --version 2>&1); "
	[ "$(inchroot rswapctl --version 2>&1)" = "rswapctl $tv" ] || bad+="rswapctl --version: $(inchroot rswapctl --version 2>&1); "
	for m in man8/rswap-server.8.gz man8/rswapctl.8.gz man8/rswapctl-add.8.gz; do
		zcat "$root/usr/share/man/$m" 2>/dev/null | grep -q '^\.TH ' || bad+="no manual page $m; "
	done
	# rswapctl's completions know the flags of its settings table.
	for c in bash-completion/completions/rswapctl zsh/vendor-completions/_rswapctl \
		fish/vendor_completions.d/rswapctl.fish; do
		grep -q 'poll-queues' "$root/usr/share/$c" 2>/dev/null || bad+="no shell completion $c; "
	done
	zcat "$root/usr/share/man/man8/rswap-server.8.gz" 2>/dev/null | grep -q 'listen' || bad+="rswap-server.8 lacks --listen; "
	for c in bash-completion/completions/rswap-server zsh/vendor-completions/_rswap-server \
		fish/vendor_completions.d/rswap-server.fish; do
		grep -q 'status-socket' "$root/usr/share/$c" 2>/dev/null || bad+="no completion $c; "
	done
	for u in "$RSWAP_TOP"/packaging/systemd/*.service; do
		[ -f "$u" ] || continue
		cmp -s "$u" "$root/usr/lib/systemd/system/${u##*/}" || bad+="unit ${u##*/} not installed; "
	done
	conffiles=$(inchroot dpkg-query --control-show rswap-tools conffiles 2>/dev/null || true)
	while IFS= read -r c; do
		grep -qxF "/etc/$c" <<<"$conffiles" || bad+="/etc/$c is not a conffile; "
	done < <(cd "$RSWAP_TOP/packaging/etc" 2>/dev/null && find rswap -type f)
	if [ -z "$bad" ]; then
		ktap_pass
		ktap_diag "units: $(cd "$root/usr/lib/systemd/system" 2>/dev/null && ls rswap* 2>/dev/null | tr '\n' ' ' || true)" \
			"conffiles: $(awk '{ print $1 }' <<<"$conffiles" | tr '\n' ' ')"
	else
		ktap_fail "$bad"
	fi
}
ktap_test "rswap-tools: rswap-server and rswapctl run, man pages, shell completions, units and conffiles in place" t_tools

# A kernel outside the series rswap-dkms builds for: its kernel hook says so when the
# kernel is installed (and notes why), and rswapctl up (rswap@NAME.service) under a
# kernel without rswap.ko says so, with that note, instead of modprobe's failure. The
# root's running kernel is the host's, for which DKMS built nothing.
t_no_module() {
	local other=7.99.1-1-amd64 hk hook up urc
	hook=$(inchroot /etc/kernel/postinst.d/rswap-dkms "$other" 2>&1)
	hk=$(uname -r)
	inchroot /etc/kernel/postinst.d/rswap-dkms "$hk" >/dev/null 2>&1
	mkdir -p "$root/etc/rswap/targets"
	printf 'server = 192.0.2.2\nsize = 16M\n' > "$root/etc/rswap/targets/nomod.conf"
	urc=0
	up=$(inchroot rswapctl up nomod 2>&1) || urc=$?
	why="rswap-dkms $ver builds rswap.ko for Debian's 7.3 kernels only"
	if [[ $hook == *"rswap-dkms: WARNING: no rswap.ko for kernel $other: $why"* ]] \
		&& [ -s "$root/var/lib/rswap-dkms/no-module-$other" ] && [ $urc = 1 ] \
		&& [[ $up == *"rswapctl: up nomod: no rswap.ko for kernel $hk: "* ]] \
		&& ! grep -q "no rswap.ko for kernel $kver" "$out/apt-install.log"; then
		ktap_pass
		ktap_diag "$(head -1 <<<"$hook")" "$(grep 'no rswap.ko' <<<"$up")"
	else
		ktap_fail "hook: $hook; up (exit $urc): $up; $(grep 'no rswap.ko' "$out/apt-install.log")"
	fi
	rm -f "$root/etc/rswap/targets/nomod.conf"
}
ktap_test "a kernel outside the 7.3 series: rswap-dkms's kernel hook reports it has no rswap.ko and why; rswapctl up under a kernel without rswap.ko says \"no rswap.ko for kernel X: ...\"" t_no_module

# the purge, and the root's removal
t_purge() {
	inchroot apt-get purge -y -q rswap-dkms > "$out/apt-purge.log" 2>&1 || true
	left=$( { find "$root/lib/modules/$kver" -name 'rswap.ko*'; ls -d "$root/usr/src/rswap-$ver" \
		"$root/var/lib/rswap-dkms" "$root/var/lib/dkms/rswap"; } 2>/dev/null || true)
	# A purged package is unknown to dpkg or "not-installed".
	pst=$(inchroot dpkg-query -W -f='${db:Status-Abbrev}' rswap-dkms 2>/dev/null || true)
	dst=$(inchroot dkms status -m rswap 2>&1 || true)
	if [ -z "$left" ] && [[ -z $pst || $pst == [up]n* ]] && [ -z "$dst" ]; then
		ktap_pass
	else
		ktap_fail "left: ${left//$root/}; dpkg: '$pst'; dkms status: $dst; $(grep -v 'Reading database' "$out/apt-purge.log" | tail -5)"
	fi
	rm -rf --one-file-system "$root"; root=
}
ktap_test "purge: rswap-dkms leaves no module, source or prepared kernel tree" t_purge

# The guest: the DKMS-built module ($out/vm/rswap.ko) with the packaged tools (the
# package of t_make_deb, the version of t_tools). The first guest test boots it once;
# every test of tests/guest-deb/load.sh is one here, named "guest: NAME", and reports
# what the guest printed for it ($GUEST_KTAP), with its diagnostics.
GUEST_KTAP='' GUEST_RC='' waited=0
guest_boot() {
	dpkg-deb -x "$tools_deb" "$out/vm/pkg"
	echo "$tv" > "$out/vm/tools-version"
	if [ -n "$gate" ] && [ ! -e "$gate" ]; then
		log "waiting for the other guests to end ($gate)"
		local w
		w=$(date +%s)
		while [ ! -e "$gate" ]; do sleep 1; done
		waited=$(( $(date +%s) - w ))
	fi
	log "booting the stock guest with the DKMS-built rswap.ko"
	GUEST_RC=0
	RSWAP_QUIET=1 bash "$RSWAP_TOP/qemu/run.sh" --kernel stock --out "$out/vm" --timeout 600 \
		tests/guest-deb/load.sh > "$out/vm/run.log" 2>&1 || GUEST_RC=$?
	GUEST_KTAP=$(sed -n '/^KTAP version/,$p' "$out/vm/console.log" 2>/dev/null || true)
}
t_guest() {
	[ -n "$GUEST_RC" ] || guest_boot
	ktap_relay "$GUEST_KTAP" "$1"
}
mkdir -p "$out/list"
guest_tests=()
# A guest script that cannot list its tests is one failing test here, not none.
if names=$(export RSWAP_TOP; RSWAP_OUT=$out/list KTAP_LIST=1 bash "$RSWAP_TOP/tests/guest-deb/load.sh") \
	&& [ -n "$names" ]; then
	mapfile -t guest_tests <<<"$names"
	for n in "${guest_tests[@]}"; do ktap_test "guest: $n" t_guest "$n"; done
else
	ktap_test "guest: tests/guest-deb/load.sh lists its tests" ktap_fail "KTAP_LIST=1 printed: $names"
fi

# The guest ran its whole plan, ${#guest_tests[@]} tests.
t_guest_end() {
	local plan ran
	[ -n "$GUEST_RC" ] || guest_boot
	plan=$(grep -Eo '^1\.\.[0-9]+' <<<"$GUEST_KTAP" | head -1 | cut -d. -f3 || true)
	ran=$(grep -cE '^(ok|not ok) ' <<<"$GUEST_KTAP" || true)
	if [ -n "$plan" ] && [ "$ran" = "$plan" ] && [ "$GUEST_RC" -le 1 ]; then
		ktap_pass
	else
		ktap_fail "guest exit $GUEST_RC, ran $ran of ${plan:-?}; $(tail -5 "$out/vm/serial.log" 2>/dev/null)"
	fi
	ktap_diag "70-deb: $(( $(date +%s) - start - waited )) s, and $waited s waiting for the other guests"
}
ktap_test "guest: boots and runs tests/guest-deb/load.sh to the end (${#guest_tests[@]} of ${#guest_tests[@]})" t_guest_end

ktap_run
