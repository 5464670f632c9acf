#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Boot one rswap test guest under QEMU and run a script of the work tree in it.
#
#   qemu/run.sh [options] SCRIPT [ARG...]
#     --kernel stock|debug   which kernel (default: $KERNEL or stock)
#     --out DIR              results folder (console.log, dmesg.log, exit-code, serial.log)
#     --mem MB --smp N       guest size (default 2048 MB, 2 vCPUs)
#     --timeout SEC          hard limit for the whole boot (default 900)
#     --ip ADDR/LEN          address of eth0 (default 192.0.2.1/24)
#     --peer ADDR            the other guest's address (two-guest runs)
#     --role NAME            passed to the script as $RSWAP_ROLE
#     --net-listen SOCK | --net-connect SOCK   join a two-guest link (a Unix socket)
#     --accel tcg|kvm        default tcg; kvm only where a probe shows it boots
#     --systemd              boot with systemd as PID 1: SCRIPT then runs before it, in a
#                            chroot of the (snapshot) root, to prepare it (install and
#                            enable units); the guest's units write exit-code themselves
#     --scratch MB           a second virtio disk of MB MiB (/dev/vdb in the guest): a
#                            sparse file in the results folder, removed when the guest ends
#
# RSWAP_RDMA=siw makes the suites use soft-iWARP (siw0) instead of soft-RoCE (rxe0).
# RSWAP_GUEST_CPU is QEMU's CPU model (default qemu64 under TCG, max under KVM). Under
# TCG, qemu64 took a third less time than max over the suites measured (25-rswapctl 25 s
# instead of 37, 56-encrypt 24 instead of 35): with max's SSE4.2 and AVX the guest's C
# library and kernel take code paths that TCG emulates in slow helpers.
# The guest's exit code becomes this script's. A guest that hangs is killed at the
# timeout and reported as exit 124.
. "$(dirname "$0")/../scripts/common.sh"

kernel=${KERNEL:-stock} out= mem=2048 smp=2 timeout=900 ip=192.0.2.1/24 peer= role=single
net= accel=${RSWAP_ACCEL:-tcg} host=rswap-guest systemd= scratch= cpu=${RSWAP_GUEST_CPU:-}
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=$2; shift 2 ;; --out) out=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;; --smp) smp=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;; --ip) ip=$2; shift 2 ;;
	--peer) peer=$2; shift 2 ;; --role) role=$2; host=rswap-$2; shift 2 ;;
	--net-listen) net="stream,server=on,addr.type=unix,addr.path=$2"; shift 2 ;;
	--net-connect) net="stream,server=off,reconnect-ms=200,addr.type=unix,addr.path=$2"; shift 2 ;;
	--accel) accel=$2; shift 2 ;;
	--systemd) systemd=1; shift ;;
	--scratch) scratch=$2; shift 2 ;;
	--) shift; break ;;
	-*) die "qemu/run.sh: unknown option $1" ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || die "usage: qemu/run.sh [options] SCRIPT [ARG...]"
script=$1; shift
[ -f "$RSWAP_TOP/$script" ] || die "no such script in the work tree: $script"
case $accel in tcg|kvm) ;; *) die "--accel must be tcg or kvm" ;; esac
[ -z "$scratch" ] || [[ $scratch =~ ^[0-9]+$ && $scratch -ge 1 ]] || die "--scratch wants MiB >= 1"
if [ "$accel" = kvm ] && [ -d /sys/module/kvm_pvm ]; then
	log "KVM here is paravirtual (kvm_pvm) and cannot boot a guest kernel; using TCG"
	accel=tcg
fi
[ -n "$cpu" ] || cpu=$([ "$accel" = tcg ] && echo qemu64 || echo max)

img=$(bash "$RSWAP_TOP/scripts/guest-image.sh")
case $kernel in
stock) vmlinux=$img/vmlinux; kmod= ;;
debug) dk=$(bash "$RSWAP_TOP/scripts/kernel-debug.sh")
       vmlinux=$dk/vmlinux; kmod=$dk/modroot ;;
*) die "--kernel must be stock or debug" ;;
esac

[ -n "$out" ] || out=$(mktemp -d /tmp/rswap-run.XXXXXX)
mkdir -p "$out"; rm -f "$out/exit-code" "$out/console.log" "$out/dmesg.log"; : > "$out/serial.log"

cmdline="console=ttyS0 loglevel=5 panic=-1 oops=panic panic_on_warn=0 root=/dev/vda rw"
cmdline+=" rswap.run=$script rswap.ip=$ip rswap.role=$role rswap.host=$host"
[ -z "$peer" ] || cmdline+=" rswap.peer=$peer"
# The soft RDMA device the test suites create: rxe (default) or siw (RSWAP_RDMA=siw).
[ -z "${RSWAP_RDMA:-}" ] || cmdline+=" rswap.rdma=$RSWAP_RDMA"
# systemd: the interface keeps the name eth0 (udev would rename it), and unit starts and
# stops are shown on the console (serial.log), which outlives the snapshot's journal.
[ -z "$systemd" ] || cmdline+=" rswap.systemd net.ifnames=0 systemd.show_status=1"
[ $# -eq 0 ] || cmdline+=" rswap.args=$(IFS=,; echo "$*")"
share() { echo "-fsdev local,id=fs$2,path=$1,security_model=none$3 -device virtio-9p-pci,fsdev=fs$2,mount_tag=$2"; }
shares="$(share "$RSWAP_TOP" rswap ,readonly=on) $(share "$out" out '')"
cmdline+=" rswap.share.rswap rswap.share.out"
if [ -n "$kmod" ]; then shares+=" $(share "$kmod" kmod ,readonly=on)"; cmdline+=" rswap.share.kmod"; fi
# A single guest still needs an Ethernet device for rxe: user networking with
# restrict=on, which connects to nothing outside the guest.
[ -n "$net" ] || net="user,restrict=on,ipv6=off"
# The MAC comes from the address, so the two guests of a pair never share one (a random
# byte collided one time in 200).
IFS=. read -r _ _ o3 o4 <<< "${ip%/*}"
mac=$(printf '52:54:00:12:%02x:%02x' $((o3 % 256)) $((o4 % 256)))
# The scratch disk: a raw file the host's page cache holds (cache=writeback, QEMU's
# default), so the guest sees a fast local disk.
disks=
if [ -n "$scratch" ]; then
	rm -f "$out/scratch.img"; truncate -s "${scratch}M" "$out/scratch.img"
	disks="-drive file=$out/scratch.img,format=raw,if=virtio,file.locking=off"
fi

# shellcheck disable=SC2086
timeout --kill-after=10 "$timeout" qemu-system-x86_64 \
	-accel "$accel" -cpu "$cpu" -m "$mem" -smp "$smp" -nodefaults -no-user-config \
	-display none -serial "file:$out/serial.log" -no-reboot \
	-kernel "$vmlinux" -initrd "$img/initramfs.cpio.gz" -append "$cmdline" \
	-drive "file=$img/rootfs.ext4,format=raw,if=virtio,snapshot=on,file.locking=off" \
	-netdev "$net,id=n0" -device virtio-net-pci,netdev=n0,mac="$mac" \
	$shares $disks &
qpid=$!
# timeout(1) runs QEMU in a process group of its own, so a signal to this script (Ctrl-C,
# or a two-guest driver stopping the server guest) would otherwise leave QEMU running
# until the timeout: pass it on.
trap 'kill -TERM $qpid 2>/dev/null; wait $qpid 2>/dev/null; log "guest stopped by a signal"; exit 143' TERM INT HUP
[ -n "${RSWAP_QUIET:-}" ] || { tail --pid=$qpid -n +1 -F "$out/serial.log" 2>/dev/null & }
qrc=0; wait $qpid || qrc=$?
wait || true
[ -z "$scratch" ] || rm -f "$out/scratch.img"
if [ -f "$out/exit-code" ]; then
	exit "$(cat "$out/exit-code")"
fi
[ $qrc -eq 124 ] && log "guest timed out after ${timeout}s (see $out/serial.log)" \
	|| log "guest ended without an exit code (qemu exit $qrc; see $out/serial.log)"
exit 124
