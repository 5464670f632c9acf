/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for rswap's Rust blk-mq layer: `static inline` request accessors, the
 * segment walk (a macro), disk allocation (a macro with a lock class key), and the
 * block_device_operations whose owner is this module, so an open disk pins rswap.ko.
 */
#ifndef RSWAP_BLK_HELPERS_H
#define RSWAP_BLK_HELPERS_H

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/scatterlist.h>

sector_t rswap_blk_rq_pos(struct request *rq);
unsigned int rswap_blk_rq_bytes(struct request *rq);
/*
 * Nanoseconds since the block layer started @rq (its start_time_ns, when the bio became a
 * request), or U64_MAX if the block layer did not time it (no I/O accounting).
 */
u64 rswap_blk_rq_age_ns(struct request *rq);
/* A KOBJ_CHANGE uevent of @gd's device with @envp (NULL-terminated) added. Sleeps. */
int rswap_blk_disk_change(struct gendisk *gd, char **envp);
unsigned int rswap_blk_rq_op(struct request *rq);
void *rswap_blk_mq_rq_to_pdu(struct request *rq);
struct request *rswap_blk_mq_rq_from_pdu(void *pdu);
/*
 * sg_init_table(@sgl, @max) + blk_rq_map_sg; returns the number of entries used, or
 * -EINVAL (nothing written) if @rq has more segments than @max.
 */
int rswap_blk_rq_map_sg(struct request *rq, struct scatterlist *sgl, unsigned int max);
/*
 * Writes the pages of @rq's data, in order, to @pages; returns how many, or -EINVAL
 * (some written) if a segment is not one whole page or there are more than @max.
 */
int rswap_blk_rq_pages(struct request *rq, struct page **pages, unsigned int max);
/*
 * sg_init_table(@sgl, @max), then one entry per page of @rq's data: bytes @off..@off+@len
 * of that page. Returns the number of entries, or -EINVAL (nothing usable written) if a
 * segment is not one whole page, there are more than @max, or the range is outside a page.
 */
int rswap_blk_rq_map_frags(struct request *rq, struct scatterlist *sgl, unsigned int max,
			   unsigned int off, unsigned int len);
struct gendisk *rswap_blk_mq_alloc_disk(struct blk_mq_tag_set *set, struct queue_limits *lim,
					void *queuedata);
/*
 * Set @disk's fops to rswap's (owner THIS_MODULE; open and release count @openers, an
 * `Openers` of openers.rs), its name and capacity.
 */
void rswap_blk_disk_setup(struct gendisk *disk, const char *name, sector_t sectors,
			  void *openers);
void *rswap_blk_hctx_driver_data(struct blk_mq_hw_ctx *hctx);
void rswap_blk_hctx_set_driver_data(struct blk_mq_hw_ctx *hctx, void *data);
struct request *rswap_blk_mq_queue_data_rq(const struct blk_mq_queue_data *bd);
struct blk_mq_hw_ctx *rswap_blk_rq_hctx(struct request *rq);
/* A request timeout of @ms milliseconds, in jiffies. */
unsigned int rswap_blk_timeout(unsigned int ms);
/* Whether @rq is in flight (started and not completed). */
bool rswap_blk_rq_in_flight(struct request *rq);
/*
 * @set has @default_queues hardware queues for all I/O and, after them, @poll_queues for
 * polled I/O (REQ_POLLED), with a map of their own only if there are any. Sets
 * nr_hw_queues and nr_maps; before blk_mq_alloc_tag_set().
 */
void rswap_blk_tag_set_queues(struct blk_mq_tag_set *set, unsigned int default_queues,
			      unsigned int poll_queues);
/*
 * The map_queues operation of such a tag set, given its @poll_queues: sizes each map
 * (reads share the default queues) and spreads the CPUs over its queues.
 */
void rswap_blk_map_queues(struct blk_mq_tag_set *set, unsigned int poll_queues);

#endif
