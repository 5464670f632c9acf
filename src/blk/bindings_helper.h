/* SPDX-License-Identifier: GPL-2.0 */
/* What bindgen generates rswap's blk-mq helper bindings from (see Kbuild). */
#include "helpers.h"

/*
 * Feature flags are macros with a sparse cast, which bindgen does not expand; a constant
 * of the same value is (as the kernel's own rust/bindings/bindings_helper.h does).
 */
const blk_features_t RSWAP_BLK_FEAT_SYNCHRONOUS = BLK_FEAT_SYNCHRONOUS;
