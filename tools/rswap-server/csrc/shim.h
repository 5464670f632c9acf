/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Flat C helpers for rswap-server: the rdma-core entry points that are static
 * inline functions or macros (ibv_post_send, ibv_post_recv, ibv_poll_cq,
 * ibv_reg_mr), and the unions of rdma_cm_event / ibv_send_wr / rdma_conn_param,
 * which the Rust side should not build field by field.
 */
#ifndef RSWAP_SHIM_H
#define RSWAP_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* What the Rust side needs from one rdma_cm_event (copied before the ack). */
struct rswap_event_info {
	int event;			/* enum rdma_cm_event_type */
	int status;
	struct rdma_cm_id *id;
	struct rdma_cm_id *listen_id;
	const void *private_data;	/* valid until the event is acked */
	uint8_t private_data_len;
	uint8_t initiator_depth;	/* from our side: RDMA READs we may issue */
	uint8_t responder_resources;	/* from our side: peer READs we must serve */
};

/* One work completion, flattened. */
struct rswap_wc {
	uint64_t wr_id;
	uint32_t status;		/* enum ibv_wc_status */
	uint32_t opcode;		/* enum ibv_wc_opcode */
	uint32_t byte_len;
};

void rswap_event_info(const struct rdma_cm_event *ev, struct rswap_event_info *out);
struct ibv_context *rswap_id_verbs(const struct rdma_cm_id *id);
const char *rswap_device_name(struct ibv_context *ctx);
/* Writes "ADDR:PORT" of the peer into buf (always NUL-terminated). */
void rswap_id_peer(struct rdma_cm_id *id, char *buf, size_t len);
/* Copies the peer's IP address into addr (16 bytes); returns 4 or 6, 0 if not IP. */
int rswap_id_peer_ip(struct rdma_cm_id *id, uint8_t *addr);

/* family 4 or 6; addr: 4 or 16 bytes in network order; scope_id: IPv6 only. */
int rswap_bind_addr(struct rdma_cm_id *id, int family, const uint8_t *addr, uint16_t port,
		    uint32_t scope_id);
/*
 * Resolves the destination (family, addr, port, scope_id); src_family 0 leaves the
 * source to the routing table, 4 or 6 binds to src_addr (port 0, the destination's
 * scope_id) as rdma_resolve_addr's source address.
 */
int rswap_resolve_addr(struct rdma_cm_id *id, int src_family, const uint8_t *src_addr,
		       int family, const uint8_t *addr, uint16_t port, uint32_t scope_id,
		       int timeout_ms);

int rswap_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *cq,
		    uint32_t max_send_wr, uint32_t max_recv_wr, uint32_t max_inline);
/*
 * Accepts with the depths of the connect request event, clamped to the device's
 * limits. The event already gives them from our side (the CM swaps the peer's
 * initiator_depth into our responder_resources), so they are passed as they are.
 */
int rswap_accept(struct rdma_cm_id *id, uint8_t initiator_depth, uint8_t responder_resources,
		 uint8_t rnr_retry_count, const void *private_data, uint8_t len);
int rswap_connect(struct rdma_cm_id *id, const void *private_data, uint8_t len);

struct ibv_mr *rswap_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access);
uint32_t rswap_mr_lkey(const struct ibv_mr *mr);
uint32_t rswap_mr_rkey(const struct ibv_mr *mr);

/* Signalled inline SEND of len bytes (copied by the call). */
int rswap_post_send_inline(struct ibv_qp *qp, const void *buf, uint32_t len, uint64_t wr_id);
/* Signalled RDMA WRITE (write != 0) or READ of one local SGE. */
int rswap_post_rdma(struct ibv_qp *qp, int write, void *local, uint32_t len, uint32_t lkey,
		    uint64_t remote_addr, uint32_t rkey, uint64_t wr_id);
/*
 * Signalled RDMA WRITE of zero bytes: no SGE, remote_addr and rkey 0 (a zero-length
 * RDMA operation is not checked against an R_Key). The peer acknowledges it without
 * touching memory or generating a completion; it probes that the peer is alive.
 */
int rswap_post_rdma_write_zero(struct ibv_qp *qp, uint64_t wr_id);
int rswap_post_recv(struct ibv_qp *qp, void *buf, uint32_t len, uint32_t lkey, uint64_t wr_id);
/* Returns 1 with *wc filled, 0 when the CQ is empty, negative on error. */
int rswap_poll_cq(struct ibv_cq *cq, struct rswap_wc *wc);
const char *rswap_wc_status_str(uint32_t status);

#endif
