#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rustfmt every Rust file of the module (and samples) with the kernel's .rustfmt.toml,
# using the build root's rustfmt (the toolchain the module is built with).
#   scripts/rustfmt.sh [--check]
. "$(dirname "$0")/common.sh"
kdir=$(bash "$RSWAP_TOP/scripts/kernel-stock.sh")
mode=()
[ "${1:-}" != --check ] || mode=(--check)
# Crate roots only (those with `module!`): rustfmt follows their `mod` declarations, and
# naming a module file as well makes it fail.
files=$(cd "$RSWAP_TOP" && grep -l '^module! {' $(find src samples -name '*.rs' ! -name '*_generated.rs' 2>/dev/null) | sort)
[ -n "$files" ] || exit 0
# shellcheck disable=SC2086
bash "$RSWAP_TOP/scripts/inroot.sh" rustfmt --edition 2021 --config-path "$kdir/.rustfmt.toml" \
	"${mode[@]}" $files
