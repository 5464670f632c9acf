#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Print the uncompressed ELF vmlinux contained in a bzImage (xz, zstd or gzip payload).
#   scripts/extract-vmlinux.sh /boot/vmlinuz-X > vmlinux
set -euo pipefail
img=$1
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
try() { # magic-as-grep-pattern decompressor
	local off
	for off in $(LC_ALL=C grep -obUaP "$1" "$img" | cut -d: -f1); do
		tail -c +$((off + 1)) "$img" | $2 > "$tmp" 2>/dev/null || true
		if [ "$(head -c 4 "$tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
			cat "$tmp"; return 0
		fi
	done
	return 1
}
try '\x28\xb5\x2f\xfd' 'zstd -dc' || try '\xfd\x37\x7a\x58\x5a\x00' 'xz -dc' \
	|| try '\x1f\x8b\x08' 'gzip -dc' || { echo "no known payload in $img" >&2; exit 1; }
