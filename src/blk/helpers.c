// SPDX-License-Identifier: GPL-2.0
/* Forwarders for the `static inline` blk-mq functions and macros; see helpers.h. */
#include <linux/module.h>
#include "helpers.h"

sector_t rswap_blk_rq_pos(struct request *rq)
{
	return blk_rq_pos(rq);
}

unsigned int rswap_blk_rq_bytes(struct request *rq)
{
	return blk_rq_bytes(rq);
}

int rswap_blk_disk_change(struct gendisk *gd, char **envp)
{
	return kobject_uevent_env(&disk_to_dev(gd)->kobj, KOBJ_CHANGE, envp);
}

u64 rswap_blk_rq_age_ns(struct request *rq)
{
	if (!rq->start_time_ns)
		return U64_MAX;
	return ktime_get_ns() - rq->start_time_ns;
}

unsigned int rswap_blk_rq_op(struct request *rq)
{
	return req_op(rq);
}

void *rswap_blk_mq_rq_to_pdu(struct request *rq)
{
	return blk_mq_rq_to_pdu(rq);
}

struct request *rswap_blk_mq_rq_from_pdu(void *pdu)
{
	return blk_mq_rq_from_pdu(pdu);
}

int rswap_blk_rq_map_sg(struct request *rq, struct scatterlist *sgl, unsigned int max)
{
	/* blk_rq_map_sg() writes at most this many entries. */
	if (blk_rq_nr_phys_segments(rq) > max)
		return -EINVAL;
	sg_init_table(sgl, max);
	return blk_rq_map_sg(rq, sgl);
}

int rswap_blk_rq_pages(struct request *rq, struct page **pages, unsigned int max)
{
	struct req_iterator iter;
	struct bio_vec bv;
	unsigned int n = 0;

	rq_for_each_segment(bv, rq, iter) {
		if (bv.bv_offset != 0 || bv.bv_len != PAGE_SIZE || n == max)
			return -EINVAL;
		pages[n++] = bv.bv_page;
	}
	return n;
}

int rswap_blk_rq_map_frags(struct request *rq, struct scatterlist *sgl, unsigned int max,
			   unsigned int off, unsigned int len)
{
	struct req_iterator iter;
	struct scatterlist *sg = NULL;
	struct bio_vec bv;
	unsigned int n = 0;

	if (len == 0 || off >= PAGE_SIZE || len > PAGE_SIZE - off)
		return -EINVAL;
	sg_init_table(sgl, max);
	rq_for_each_segment(bv, rq, iter) {
		if (bv.bv_offset != 0 || bv.bv_len != PAGE_SIZE || n == max)
			return -EINVAL;
		sg = sg ? sg_next(sg) : sgl;
		sg_set_page(sg, bv.bv_page, len, off);
		n++;
	}
	if (sg)
		sg_mark_end(sg);
	return n;
}

struct gendisk *rswap_blk_mq_alloc_disk(struct blk_mq_tag_set *set, struct queue_limits *lim,
					void *queuedata)
{
	return blk_mq_alloc_disk(set, lim, queuedata);
}

/* In openers.rs: count an opener of the disk whose private_data is @openers. */
int rswap_blk_openers_open(void *openers);
void rswap_blk_openers_release(void *openers);

static int rswap_bdev_open(struct gendisk *disk, blk_mode_t mode)
{
	return rswap_blk_openers_open(disk->private_data);
}

static void rswap_bdev_release(struct gendisk *disk)
{
	rswap_blk_openers_release(disk->private_data);
}

/* The owner pins rswap.ko while the disk is open (swapon, an open file descriptor). */
static const struct block_device_operations rswap_bdev_ops = {
	.owner = THIS_MODULE,
	.open = rswap_bdev_open,
	.release = rswap_bdev_release,
};

void rswap_blk_disk_setup(struct gendisk *disk, const char *name, sector_t sectors,
			  void *openers)
{
	disk->fops = &rswap_bdev_ops;
	disk->private_data = openers;
	strscpy(disk->disk_name, name, DISK_NAME_LEN);
	set_capacity(disk, sectors);
}

void *rswap_blk_hctx_driver_data(struct blk_mq_hw_ctx *hctx)
{
	return hctx->driver_data;
}

void rswap_blk_hctx_set_driver_data(struct blk_mq_hw_ctx *hctx, void *data)
{
	hctx->driver_data = data;
}

struct request *rswap_blk_mq_queue_data_rq(const struct blk_mq_queue_data *bd)
{
	return bd->rq;
}

struct blk_mq_hw_ctx *rswap_blk_rq_hctx(struct request *rq)
{
	return rq->mq_hctx;
}

bool rswap_blk_rq_in_flight(struct request *rq)
{
	return blk_mq_rq_state(rq) == MQ_RQ_IN_FLIGHT;
}

unsigned int rswap_blk_timeout(unsigned int ms)
{
	return msecs_to_jiffies(ms);
}

void rswap_blk_tag_set_queues(struct blk_mq_tag_set *set, unsigned int default_queues,
			      unsigned int poll_queues)
{
	set->nr_hw_queues = default_queues + poll_queues;
	set->nr_maps = poll_queues ? HCTX_MAX_TYPES : 1;
}

void rswap_blk_map_queues(struct blk_mq_tag_set *set, unsigned int poll_queues)
{
	unsigned int default_queues = set->nr_hw_queues - poll_queues;
	unsigned int i;

	/* blk_mq_alloc_tag_set() gave every map all the queues: size them here. */
	set->map[HCTX_TYPE_DEFAULT].nr_queues = default_queues;
	set->map[HCTX_TYPE_DEFAULT].queue_offset = 0;
	if (set->nr_maps > HCTX_TYPE_POLL) {
		set->map[HCTX_TYPE_READ].nr_queues = default_queues;
		set->map[HCTX_TYPE_READ].queue_offset = 0;
		set->map[HCTX_TYPE_POLL].nr_queues = poll_queues;
		set->map[HCTX_TYPE_POLL].queue_offset = default_queues;
	}
	for (i = 0; i < set->nr_maps; i++)
		blk_mq_map_queues(&set->map[i]);
}
