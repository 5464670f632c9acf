// SPDX-License-Identifier: GPL-2.0
/* Forwarders for the `static inline` RDMA functions and macros; see helpers.h. */
#include <linux/device.h>
#include "helpers.h"

const char *rswap_ib_device_name(struct ib_device *dev)
{
	return dev_name(&dev->dev);
}

/* A macro that names the caller's module (KBUILD_MODNAME, here "rswap"). */
struct ib_pd *rswap_ib_alloc_pd(struct ib_device *dev, unsigned int flags)
{
	return ib_alloc_pd(dev, flags);
}

void rswap_ib_dealloc_pd(struct ib_pd *pd)
{
	ib_dealloc_pd(pd);
}

struct ib_cq *rswap_ib_alloc_cq(struct ib_device *dev, void *private, int nr_cqe,
				int comp_vector, enum ib_poll_context poll_ctx)
{
	return ib_alloc_cq(dev, private, nr_cqe, comp_vector, poll_ctx);
}
