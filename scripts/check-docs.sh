#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A host check of `make check`: the documentation against the code. README.md's index
# lists every page of Documentation/, and every sample of `rswapctl list` in the pages has
# the columns rswapctl prints (its header on an empty configfs, blanks ignored). Prints
# what is wrong; exits 1 if anything is.
#   scripts/check-docs.sh [RSWAPCTL]   (default: the release build of build-server.sh)
. "$(dirname "$0")/common.sh"

ctl=${1:-$RSWAP_TOP/tools/rswapctl/target/release/rswapctl}
[ -x "$ctl" ] || die "$ctl not built (scripts/build-server.sh)"
cd "$RSWAP_TOP"
bad=0
for f in Documentation/*.md; do
	grep -qF "]($f)" README.md || { echo "README.md's index does not list $f"; bad=1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/rswap"
: > "$tmp/swaps"
header=$("$ctl" --configfs "$tmp/rswap" --proc-swaps "$tmp/swaps" list | tr -s ' ')
samples=0
while IFS=: read -r file line text; do
	samples=$((samples + 1))
	[ "$(tr -s ' ' <<<"$text")" = "$header" ] \
		|| { echo "$file:$line: a sample of rswapctl list with other columns than '$header'"; bad=1; }
done < <(grep -rn '^NAME  *DEVICE ' README.md Documentation/)
[ $samples -gt 0 ] || { echo "no sample of rswapctl list found in the documentation"; bad=1; }
[ $bad = 0 ] && echo "$(ls Documentation/*.md | wc -l) pages indexed, $samples samples of rswapctl list"
exit $bad
