// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "shim.h"

void rswap_event_info(const struct rdma_cm_event *ev, struct rswap_event_info *out)
{
	memset(out, 0, sizeof(*out));
	out->event = ev->event;
	out->status = ev->status;
	out->id = ev->id;
	out->listen_id = ev->listen_id;
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		out->private_data = ev->param.conn.private_data;
		out->private_data_len = ev->param.conn.private_data ?
					ev->param.conn.private_data_len : 0;
		out->initiator_depth = ev->param.conn.initiator_depth;
		out->responder_resources = ev->param.conn.responder_resources;
		break;
	default:
		break;
	}
}

struct ibv_context *rswap_id_verbs(const struct rdma_cm_id *id)
{
	return id->verbs;
}

const char *rswap_device_name(struct ibv_context *ctx)
{
	const char *name = ctx ? ibv_get_device_name(ctx->device) : NULL;

	return name ? name : "?";
}

void rswap_id_peer(struct rdma_cm_id *id, char *buf, size_t len)
{
	struct sockaddr *sa = rdma_get_peer_addr(id);
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned int port = 0;

	if (sa->sa_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
	}
	if (len)
		snprintf(buf, len, "%s:%u", host, port);
}

int rswap_id_peer_ip(struct rdma_cm_id *id, uint8_t *addr)
{
	struct sockaddr *sa = rdma_get_peer_addr(id);

	if (sa->sa_family == AF_INET) {
		memcpy(addr, &((struct sockaddr_in *)sa)->sin_addr, 4);
		return 4;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(addr, &((struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return 6;
	}
	return 0;
}

static int fill_sockaddr(struct sockaddr_storage *ss, int family, const uint8_t *addr,
			 uint16_t port, uint32_t scope_id)
{
	memset(ss, 0, sizeof(*ss));
	if (family == 4) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		memcpy(&in->sin_addr, addr, 4);
		return 0;
	}
	if (family == 6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		memcpy(&in6->sin6_addr, addr, 16);
		in6->sin6_scope_id = scope_id;
		return 0;
	}
	errno = EAFNOSUPPORT;
	return -1;
}

int rswap_bind_addr(struct rdma_cm_id *id, int family, const uint8_t *addr, uint16_t port,
		    uint32_t scope_id)
{
	struct sockaddr_storage ss;

	if (fill_sockaddr(&ss, family, addr, port, scope_id))
		return -1;
	return rdma_bind_addr(id, (struct sockaddr *)&ss);
}

int rswap_resolve_addr(struct rdma_cm_id *id, int src_family, const uint8_t *src_addr,
		       int family, const uint8_t *addr, uint16_t port, uint32_t scope_id,
		       int timeout_ms)
{
	struct sockaddr_storage src, dst;

	if (fill_sockaddr(&dst, family, addr, port, scope_id))
		return -1;
	if (!src_family)
		return rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, timeout_ms);
	if (fill_sockaddr(&src, src_family, src_addr, 0, scope_id))
		return -1;
	return rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&dst,
				 timeout_ms);
}

int rswap_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *cq,
		    uint32_t max_send_wr, uint32_t max_recv_wr, uint32_t max_inline)
{
	struct ibv_qp_init_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.send_cq = cq;
	attr.recv_cq = cq;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 0;
	attr.cap.max_send_wr = max_send_wr;
	attr.cap.max_recv_wr = max_recv_wr;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = max_inline;
	return rdma_create_qp(id, pd, &attr);
}

static uint8_t clamp_u8(uint8_t want, int max)
{
	if (max < 0)
		return 0;
	return want > max ? (uint8_t)max : want;
}

int rswap_accept(struct rdma_cm_id *id, uint8_t initiator_depth, uint8_t responder_resources,
		 uint8_t rnr_retry_count, const void *private_data, uint8_t len)
{
	struct rdma_conn_param param;
	struct ibv_device_attr attr;

	if (ibv_query_device(id->verbs, &attr))
		return -1;
	memset(&param, 0, sizeof(param));
	param.responder_resources = clamp_u8(responder_resources, attr.max_qp_rd_atom);
	param.initiator_depth = clamp_u8(initiator_depth, attr.max_qp_init_rd_atom);
	param.retry_count = 7;
	param.rnr_retry_count = rnr_retry_count;
	param.private_data = private_data;
	param.private_data_len = len;
	return rdma_accept(id, &param);
}

int rswap_connect(struct rdma_cm_id *id, const void *private_data, uint8_t len)
{
	struct rdma_conn_param param;
	struct ibv_device_attr attr;

	if (ibv_query_device(id->verbs, &attr))
		return -1;
	memset(&param, 0, sizeof(param));
	param.private_data = private_data;
	param.private_data_len = len;
	param.initiator_depth = clamp_u8(16, attr.max_qp_init_rd_atom);
	param.responder_resources = 0;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	return rdma_connect(id, &param);
}

struct ibv_mr *rswap_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	return ibv_reg_mr(pd, addr, len, access);
}

uint32_t rswap_mr_lkey(const struct ibv_mr *mr)
{
	return mr->lkey;
}

uint32_t rswap_mr_rkey(const struct ibv_mr *mr)
{
	return mr->rkey;
}

int rswap_post_send_inline(struct ibv_qp *qp, const void *buf, uint32_t len, uint64_t wr_id)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;

	sge.addr = (uintptr_t)buf;
	sge.length = len;
	sge.lkey = 0;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	return ibv_post_send(qp, &wr, &bad);
}

int rswap_post_rdma(struct ibv_qp *qp, int write, void *local, uint32_t len, uint32_t lkey,
		    uint64_t remote_addr, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;

	sge.addr = (uintptr_t)local;
	sge.length = len;
	sge.lkey = lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = remote_addr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

int rswap_post_rdma_write_zero(struct ibv_qp *qp, uint64_t wr_id)
{
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = NULL;
	wr.num_sge = 0;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = 0;
	wr.wr.rdma.rkey = 0;
	return ibv_post_send(qp, &wr, &bad);
}

int rswap_post_recv(struct ibv_qp *qp, void *buf, uint32_t len, uint32_t lkey, uint64_t wr_id)
{
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_sge sge;

	sge.addr = (uintptr_t)buf;
	sge.length = len;
	sge.lkey = lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(qp, &wr, &bad);
}

int rswap_poll_cq(struct ibv_cq *cq, struct rswap_wc *out)
{
	struct ibv_wc wc;
	int n = ibv_poll_cq(cq, 1, &wc);

	if (n <= 0)
		return n;
	out->wr_id = wc.wr_id;
	out->status = wc.status;
	out->opcode = wc.opcode;
	out->byte_len = wc.byte_len;
	return 1;
}

const char *rswap_wc_status_str(uint32_t status)
{
	return ibv_wc_status_str((enum ibv_wc_status)status);
}
