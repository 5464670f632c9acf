// SPDX-License-Identifier: GPL-2.0
/* The sample links its own copy of the RDMA layer's C helpers (KBUILD_MODNAME differs). */
#include "../../src/ib/helpers.c"
