/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for rswap's Rust RDMA layer: the RDMA API pieces that are `static inline`
 * functions or macros (using KBUILD_MODNAME) and so have no symbol Rust could call.
 * Each is a one-line forward; see helpers.c.
 */
#ifndef RSWAP_IB_HELPERS_H
#define RSWAP_IB_HELPERS_H

#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

const char *rswap_ib_device_name(struct ib_device *dev);
struct ib_pd *rswap_ib_alloc_pd(struct ib_device *dev, unsigned int flags);
void rswap_ib_dealloc_pd(struct ib_pd *pd);
struct ib_cq *rswap_ib_alloc_cq(struct ib_device *dev, void *private, int nr_cqe,
				int comp_vector, enum ib_poll_context poll_ctx);

#endif
