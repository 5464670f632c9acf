// SPDX-License-Identifier: GPL-2.0
/* Forwarders for the `static inline` RDMA functions and macros; see helpers.h. */
#include <linux/bottom_half.h>
#include <linux/device.h>
#include <linux/in.h>
#include <linux/irq_poll.h>
#include <linux/rcupdate.h>
#include <net/net_namespace.h>
#include "helpers.h"

const char *rswap_ib_device_name(struct ib_device *dev)
{
	return dev_name(&dev->dev);
}

void *rswap_ib_get_client_data(struct ib_device *dev, struct ib_client *client)
{
	return ib_get_client_data(dev, client);
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

int rswap_ib_dma_map_single(struct ib_device *dev, void *cpu_addr, size_t size,
			    enum dma_data_direction dir, u64 *addr)
{
	u64 a = ib_dma_map_single(dev, cpu_addr, size, dir);

	if (ib_dma_mapping_error(dev, a))
		return -ENOMEM;
	*addr = a;
	return 0;
}

void rswap_ib_dma_unmap_single(struct ib_device *dev, u64 addr, size_t size,
			       enum dma_data_direction dir)
{
	ib_dma_unmap_single(dev, addr, size, dir);
}

void rswap_ib_dma_sync_single_for_cpu(struct ib_device *dev, u64 addr, size_t size,
				      enum dma_data_direction dir)
{
	ib_dma_sync_single_for_cpu(dev, addr, size, dir);
}

int rswap_ib_dma_map_sg_sges(struct ib_device *dev, struct scatterlist *sgl, int nents,
			     enum dma_data_direction dir, struct ib_sge *sges, u32 lkey)
{
	struct scatterlist *sg;
	int i, n;

	n = ib_dma_map_sg(dev, sgl, nents, dir);
	if (n <= 0)
		return 0;
	for_each_sg(sgl, sg, n, i) {
		sges[i].addr = sg_dma_address(sg);
		sges[i].length = sg_dma_len(sg);
		sges[i].lkey = lkey;
	}
	return n;
}

void rswap_ib_dma_unmap_sg(struct ib_device *dev, struct scatterlist *sgl, int nents,
			   enum dma_data_direction dir)
{
	ib_dma_unmap_sg(dev, sgl, nents, dir);
}

void rswap_ib_qp_event(struct ib_event *event, void *context)
{
	const char *name = context ? context : "rswap";

	ibdev_warn_ratelimited(event->device, "%s: QP %u: async event: %s (%d)\n", name,
			       event->element.qp ? event->element.qp->qp_num : 0,
			       ib_event_msg(event->event), event->event);
}

/*
 * The completion entry of the unsignalled work requests rswap posts (the WRITE of a
 * fenced write, the registrations of iWARP READ sinks): they complete only in error (or
 * flushed), and the signalled work request that follows each of them then completes in
 * error too, which is where its owner learns of it. Nothing to do here.
 */
static void rswap_ib_unsignalled_done(struct ib_cq *cq, struct ib_wc *wc)
{
}

static struct ib_cqe rswap_ib_fence_cqe = {
	.done = rswap_ib_unsignalled_done,
};

static struct ib_cqe rswap_ib_reg_cqe = {
	.done = rswap_ib_unsignalled_done,
};

struct ib_mr *rswap_ib_alloc_mr(struct ib_pd *pd, u32 max_pages)
{
	return ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, max_pages);
}

void rswap_ib_dereg_mr(struct ib_mr *mr)
{
	ib_dereg_mr(mr);
}

/*
 * Points @mr's page list at the first @count DMA-mapped entries of @sgl, or, with no @sgl,
 * at the single buffer @sge describes, and gives it a new key: ready for an IB_WR_REG_MR.
 */
static int rswap_ib_mr_map(struct ib_mr *mr, struct scatterlist *sgl, int count,
			   const struct ib_sge *sge)
{
	struct scatterlist one;
	int n;

	if (!sgl) {
		/* Only the DMA address and length are read (ib_sg_to_pages). */
		sg_init_table(&one, 1);
		sg_dma_address(&one) = sge->addr;
		sg_dma_len(&one) = sge->length;
		sgl = &one;
		count = 1;
	}
	n = ib_map_mr_sg(mr, sgl, count, NULL, PAGE_SIZE);
	if (n < 0)
		return n;
	/* Fewer: the entries' middles are not page-contiguous, or too many pages. */
	if (n != count)
		return -EINVAL;
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	return 0;
}

int rswap_ib_mr_map_single(struct ib_mr *mr, u64 addr, u32 length)
{
	struct ib_sge sge = { .addr = addr, .length = length };

	return rswap_ib_mr_map(mr, NULL, 0, &sge);
}

/* An unsignalled registration of @mr, for remote writes (an iWARP READ sink), before @next. */
static void rswap_ib_reg_wr(struct ib_reg_wr *reg, struct ib_mr *mr, struct ib_send_wr *next)
{
	reg->wr.wr_cqe = &rswap_ib_reg_cqe;
	reg->wr.opcode = IB_WR_REG_MR;
	reg->wr.send_flags = 0;
	reg->wr.next = next;
	reg->mr = mr;
	reg->key = mr->rkey;
	reg->access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
}

int rswap_ib_post_rdma(struct ib_qp *qp, struct rswap_ib_rdma *p)
{
	struct ib_reg_wr reg = {};
	struct ib_sge sink, fence;
	struct ib_rdma_wr read = {
		.wr = {
			.wr_cqe = p->cqe,
			.sg_list = &fence,
			.num_sge = 1,
			.opcode = IB_WR_RDMA_READ,
			.send_flags = IB_SEND_SIGNALED,
		},
		.remote_addr = p->remote_addr,
		.rkey = p->rkey,
	};
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe = p->cqe,
			.sg_list = p->sges,
			.num_sge = p->nsges,
			.opcode = p->write ? IB_WR_RDMA_WRITE : IB_WR_RDMA_READ,
			.send_flags = IB_SEND_SIGNALED,
		},
		.remote_addr = p->remote_addr,
		.rkey = p->rkey,
	};
	struct ib_send_wr *first = &wr.wr;
	const struct ib_send_wr *bad = NULL;
	int ret;

	p->reg_posted = false;
	if (!p->write && p->sink_mr) {
		struct ib_mr *mr = p->sink_mr;

		if (p->nsges < 1)
			return -EINVAL;
		ret = rswap_ib_mr_map(mr, p->sgl, p->sg_count, p->sges);
		if (ret)
			return ret;
		/* One SGE, the registered sink; the READ's completion invalidates it. */
		sink.addr = mr->iova;
		sink.length = mr->length;
		sink.lkey = mr->lkey;
		wr.wr.sg_list = &sink;
		wr.wr.num_sge = 1;
		wr.wr.opcode = IB_WR_RDMA_READ_WITH_INV;
		wr.wr.ex.invalidate_rkey = mr->lkey;
		rswap_ib_reg_wr(&reg, mr, &wr.wr);
		first = &reg.wr;
	}
	if (p->write && p->fence_mr) {
		struct ib_mr *mr = p->fence_mr;

		/* The WRITE unsignalled, then a one-byte READ that completes for both. */
		fence.addr = mr->iova;
		fence.length = 1;
		fence.lkey = mr->lkey;
		wr.wr.wr_cqe = &rswap_ib_fence_cqe;
		wr.wr.send_flags = 0;
		wr.wr.next = &read.wr;
		if (p->fence_reg) {
			rswap_ib_reg_wr(&reg, mr, &wr.wr);
			first = &reg.wr;
		}
	}
	/*
	 * The send queue has room for every chain (see Qp::create), so a chain is refused
	 * whole (the QP is in error) or not at all. Should only the registration go, a READ
	 * sink's region stays valid: its slot's next registration then finds it valid, which
	 * a provider fails (siw does), failing the QP; the region goes with the QP.
	 */
	ret = ib_post_send(qp, first, &bad);
	p->reg_posted = first == &reg.wr && (!ret || bad != first);
	return ret;
}

int rswap_ib_post_recv(struct ib_qp *qp, struct ib_cqe *cqe, struct ib_sge *sge)
{
	struct ib_recv_wr wr = {
		.wr_cqe = cqe,
		.sg_list = sge,
		.num_sge = 1,
	};

	return ib_post_recv(qp, &wr, NULL);
}

struct rdma_cm_id *rswap_rdma_create_id(rdma_cm_event_handler handler, void *context)
{
	return rdma_create_id(&init_net, handler, context, RDMA_PS_TCP, IB_QPT_RC);
}

struct ib_cqe *rswap_ib_wc_cqe(struct ib_wc *wc)
{
	return wc->wr_cqe;
}

void rswap_ib_wc_flushed(struct ib_wc *wc, struct ib_cqe *cqe)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_cqe = cqe;
	wc->status = IB_WC_WR_FLUSH_ERR;
}

struct ib_cq *rswap_ib_alloc_cq(struct ib_device *dev, void *context, int nr_cqe,
				int comp_vector, bool direct)
{
	return ib_alloc_cq(dev, context, nr_cqe, comp_vector,
			   direct ? IB_POLL_DIRECT : IB_POLL_SOFTIRQ);
}

void rswap_ib_free_cq(struct ib_cq *cq)
{
	/*
	 * ib_free_cq() stops a softirq CQ's poller with irq_poll_disable(), which returns
	 * as soon as the poller gave up its "scheduled" bit: ib_poll_handler() does that
	 * (irq_poll_complete()) and then still re-arms the CQ (ib_req_notify_cq()), so on
	 * another CPU it can be re-arming the CQ that ib_free_cq() is destroying. A KASAN
	 * use-after-free in rxe_req_notify_cq() showed it, with soft-RoCE's device removed
	 * under I/O in a guest whose vCPUs the host stalled. So keep the poller from being
	 * scheduled again (hold its bit), wait until every softirq handler that was running
	 * has returned (a softirq is an RCU read-side section; expedited, as a disk's
	 * teardown frees two CQs per queue), and only then let ib_free_cq() take the bit.
	 * Nothing schedules the poller in between: the QP is gone, so no completion and no
	 * completion event comes any more.
	 */
	if (cq->poll_ctx == IB_POLL_SOFTIRQ) {
		irq_poll_disable(&cq->iop);
		synchronize_rcu_expedited();
		irq_poll_enable(&cq->iop);
	}
	ib_free_cq(cq);
}

int rswap_ib_poll_cq(struct ib_cq *cq, int budget)
{
	int n;

	if (WARN_ON_ONCE(in_hardirq()))
		return 0;
	local_bh_disable();
	n = ib_process_cq_direct(cq, budget);
	local_bh_enable();
	return n;
}

void rswap_local_bh_disable(void)
{
	local_bh_disable();
}

void rswap_local_bh_enable(void)
{
	local_bh_enable();
}

const void *rswap_cm_event_private_data(struct rdma_cm_event *ev, u8 *len)
{
	*len = ev->param.conn.private_data_len;
	return ev->param.conn.private_data;
}
