/* SPDX-License-Identifier: GPL-2.0 */
/* What bindgen generates rswap's blk-mq helper bindings from (see Kbuild). */
#include "helpers.h"
