/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for rswap's Rust RDMA layer: the RDMA API pieces that are `static inline`
 * functions or macros (some using KBUILD_MODNAME), and the work requests rswap posts,
 * built here so the Rust side never touches the unions inside `struct ib_send_wr`.
 */
#ifndef RSWAP_IB_HELPERS_H
#define RSWAP_IB_HELPERS_H

#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

const char *rswap_ib_device_name(struct ib_device *dev);
void *rswap_ib_get_client_data(struct ib_device *dev, struct ib_client *client);
struct ib_pd *rswap_ib_alloc_pd(struct ib_device *dev, unsigned int flags);
void rswap_ib_dealloc_pd(struct ib_pd *pd);

/* DMA mapping of one kernel buffer. Returns 0 and sets *addr, or -ENOMEM. */
int rswap_ib_dma_map_single(struct ib_device *dev, void *cpu_addr, size_t size,
			    enum dma_data_direction dir, u64 *addr);
void rswap_ib_dma_unmap_single(struct ib_device *dev, u64 addr, size_t size,
			       enum dma_data_direction dir);
void rswap_ib_dma_sync_single_for_cpu(struct ib_device *dev, u64 addr, size_t size,
				      enum dma_data_direction dir);
/*
 * DMA-map a scatterlist and describe each mapped entry as an SGE with @lkey.
 * Returns the number of SGEs (at most @nents) or 0 when mapping failed.
 */
int rswap_ib_dma_map_sg_sges(struct ib_device *dev, struct scatterlist *sgl, int nents,
			     enum dma_data_direction dir, struct ib_sge *sges, u32 lkey);
void rswap_ib_dma_unmap_sg(struct ib_device *dev, struct scatterlist *sgl, int nents,
			   enum dma_data_direction dir);

/*
 * Logs a QP's asynchronous events (fatal errors, path migration, ...) with the device and
 * @context, the QP's name (a NUL-terminated string that outlives the QP) or NULL.
 */
void rswap_ib_qp_event(struct ib_event *event, void *context);

/* ib_alloc_mr(@pd, IB_MR_TYPE_MEM_REG, @max_pages); ib_dereg_mr (static inline). */
struct ib_mr *rswap_ib_alloc_mr(struct ib_pd *pd, u32 max_pages);
void rswap_ib_dereg_mr(struct ib_mr *mr);
/*
 * Points @mr at the @length bytes DMA-mapped at @addr and gives it a new key, ready to be
 * registered (@fence_reg of struct rswap_ib_rdma). Returns 0 or a negative errno.
 */
int rswap_ib_mr_map_single(struct ib_mr *mr, u64 addr, u32 length);

/* One RDMA READ or WRITE for rswap_ib_post_rdma. */
struct rswap_ib_rdma {
	/* The completion entry of the one signalled work request. */
	struct ib_cqe *cqe;
	/* RDMA WRITE if true, else RDMA READ. */
	bool write;
	/* The local buffers. */
	struct ib_sge *sges;
	int nsges;
	u64 remote_addr;
	u32 rkey;
	/*
	 * READ, iWARP: the sink is registered in @sink_mr (an unsignalled IB_WR_REG_MR
	 * for local and remote write) and read with IB_WR_RDMA_READ_WITH_INV, one SGE,
	 * which invalidates it again. The pages are the first @sg_count DMA-mapped entries
	 * of @sgl, which @sges describe; with no @sgl, the single buffer of @sges.
	 */
	struct ib_mr *sink_mr;
	struct scatterlist *sgl;
	int sg_count;
	/*
	 * WRITE, iWARP: the WRITE goes unsignalled, and an RDMA READ of one byte of the
	 * same remote address into the first byte of @fence_mr follows it, signalled: its
	 * response means the WRITE was placed. With @fence_reg, an unsignalled IB_WR_REG_MR
	 * of @fence_mr (mapped with rswap_ib_mr_map_single) goes first.
	 */
	struct ib_mr *fence_mr;
	bool fence_reg;
	/* Out: whether the IB_WR_REG_MR went to the send queue (even if what follows failed). */
	bool reg_posted;
};

/* Posts @p's chain with one ib_post_send. Returns 0 or a negative errno. */
int rswap_ib_post_rdma(struct ib_qp *qp, struct rswap_ib_rdma *p);
/* Post one RECV of @sge whose completion goes to @cqe. */
int rswap_ib_post_recv(struct ib_qp *qp, struct ib_cqe *cqe, struct ib_sge *sge);

/* An rdma_cm id in the initial network namespace, RDMA_PS_TCP, RC. */
struct rdma_cm_id *rswap_rdma_create_id(rdma_cm_event_handler handler, void *context);
/* The completion entry of a work completion (the `wr_cqe` member of a union). */
struct ib_cqe *rswap_ib_wc_cqe(struct ib_wc *wc);
/* Fills @wc as the flushed completion of the work request whose entry is @cqe. */
void rswap_ib_wc_flushed(struct ib_wc *wc, struct ib_cqe *cqe);
/*
 * A completion queue of its own for one QP, polled in softirq context or, if @direct,
 * only by ib_process_cq_direct(); with @context as its `cq_context`; an ERR_PTR on
 * failure. Freed with rswap_ib_free_cq().
 */
struct ib_cq *rswap_ib_alloc_cq(struct ib_device *dev, void *context, int nr_cqe,
				int comp_vector, bool direct);
/*
 * Frees a CQ of rswap_ib_alloc_cq() whose QP is gone, once no completion handler of it
 * runs any more. Sleeps.
 */
void rswap_ib_free_cq(struct ib_cq *cq);
/*
 * Runs the handlers of at most @budget completions of the IB_POLL_DIRECT CQ @cq, with
 * softirqs disabled as a softirq CQ runs them; returns how many ran. Not in hard
 * interrupt context (warns and does nothing there).
 */
int rswap_ib_poll_cq(struct ib_cq *cq, int budget);
/* Softirqs off and on again on this CPU (completion handlers expect them off). */
void rswap_local_bh_disable(void);
void rswap_local_bh_enable(void);
/* The private data of a connection event (REJECTED, ESTABLISHED); sets *len. */
const void *rswap_cm_event_private_data(struct rdma_cm_event *ev, u8 *len);

#endif
