#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Run a command inside the build root, with the work tree bind-mounted at its own path.
# Mounts live in a private mount namespace and vanish with the command.
#   scripts/inroot.sh CMD [ARGS...]
. "$(dirname "$0")/common.sh"
ROOT=$(bash "$RSWAP_TOP/scripts/buildroot.sh")
mkdir -p "$ROOT$RSWAP_TOP" "$ROOT/proc" "$ROOT/dev"
exec unshare --mount --propagation private -- bash -c '
	set -e
	root=$1 top=$2; shift 2
	mount -t proc proc "$root/proc"
	mount --rbind /dev "$root/dev"
	mount --bind "$top" "$root$top"
	cd "$root$top"
	exec chroot "$root" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
		bash -c "cd \"\$0\" && exec \"\$@\"" "$top" "$@"
' bash "$ROOT" "$RSWAP_TOP" "$@"
