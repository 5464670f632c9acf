// SPDX-License-Identifier: GPL-2.0
/*
 * The benchmark links its own copy of the C helpers of the layers it compiles
 * (KBUILD_MODNAME differs): the RDMA layer's and kernel_ext's.
 */
#include "../../src/ib/helpers.c"
#include "../../src/kernel_ext/helpers.c"
