// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel crypto API's hmac(sha256) for rswap's in-band authentication, behind three
 * functions: the Rust side sees `struct crypto_shash` only as a pointer (see hmac.rs).
 * AES-GCM of whole pages for encrypted targets (see aead.rs). Socket addresses, parsed
 * and printed as the kernel does (see inet.rs). And the payload of a `logon` key of the
 * caller's keyrings (see keyring.rs).
 */
#include <crypto/aead.h>
#include <crypto/gcm.h>
#include <crypto/utils.h>
#include <linux/highmem.h>
#include <linux/module.h>
#include <linux/raid/pq.h>
#include <linux/err.h>
#include <linux/scatterlist.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/unaligned.h>
#include <linux/in.h>
#include <linux/mutex.h>
#include <linux/inet.h>
#include <linux/key.h>
#include <keys/user-type.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include "helpers.h"

/* A keyed hmac(sha256) transform, or an ERR_PTR. Sleeps (GFP_KERNEL). */
struct crypto_shash *rswap_hmac_sha256_new(const u8 *key, unsigned int len)
{
	struct crypto_shash *tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	int err;

	if (IS_ERR(tfm))
		return tfm;
	err = crypto_shash_setkey(tfm, key, len);
	if (err) {
		crypto_free_shash(tfm);
		return ERR_PTR(err);
	}
	return tfm;
}

/*
 * HMAC-SHA256 of @data into @out (32 bytes). The descriptor lives on the stack, so calls
 * on one keyed transform may run concurrently. Does not allocate.
 */
int rswap_hmac_sha256(struct crypto_shash *tfm, const u8 *data, unsigned int len, u8 *out)
{
	return crypto_shash_tfm_digest(tfm, data, len, out);
}

void rswap_hmac_sha256_free(struct crypto_shash *tfm)
{
	crypto_free_shash(tfm);
}

struct crypto_aead *rswap_aes_gcm_new(const u8 *key, unsigned int len)
{
	/* Synchronous implementations only: pages are sealed in queue_rq, opened in softirq. */
	struct crypto_aead *tfm = crypto_alloc_aead("gcm(aes)", 0, CRYPTO_ALG_ASYNC);
	int err;

	if (IS_ERR(tfm))
		return tfm;
	err = crypto_aead_setkey(tfm, key, len);
	if (!err)
		err = crypto_aead_setauthsize(tfm, RSWAP_AEAD_TAG_LEN);
	if (err) {
		crypto_free_aead(tfm);
		return ERR_PTR(err);
	}
	return tfm;
}

void rswap_aes_gcm_free(struct crypto_aead *tfm)
{
	crypto_free_aead(tfm);
}

const char *rswap_aes_gcm_driver(struct crypto_aead *tfm)
{
	return crypto_tfm_alg_driver_name(crypto_aead_tfm(tfm));
}

struct rswap_aead_req *rswap_aead_req_new(struct crypto_aead *tfm)
{
	struct rswap_aead_req *r;

	r = kzalloc(sizeof(*r) + sizeof(struct aead_request) + crypto_aead_reqsize(tfm),
		    GFP_KERNEL);
	if (!r)
		return NULL;
	aead_request_set_tfm(r->req, tfm);
	aead_request_set_callback(r->req, 0, NULL, NULL);
	aead_request_set_ad(r->req, sizeof(r->ad));
	return r;
}

void rswap_aead_req_free(struct rswap_aead_req *r)
{
	kfree_sensitive(r);
}

/* The 12-byte GCM nonce of @nonce, and the associated data of @block. */
static void rswap_aead_prepare(struct rswap_aead_req *r, u64 nonce, u64 block)
{
	put_unaligned_le64(nonce, r->iv);
	memset(r->iv + 8, 0, GCM_AES_IV_SIZE - 8);
	put_unaligned_le64(block, r->ad);
}

int rswap_aead_seal(struct rswap_aead_req *r, struct page *src, struct page *dst, u64 nonce,
		    u64 block, u8 *tag)
{
	struct scatterlist in[2], out[3];
	int err;

	rswap_aead_prepare(r, nonce, block);
	sg_init_table(in, 2);
	sg_set_buf(&in[0], r->ad, sizeof(r->ad));
	sg_set_page(&in[1], src, PAGE_SIZE, 0);
	sg_init_table(out, 3);
	sg_set_buf(&out[0], r->ad, sizeof(r->ad));
	sg_set_page(&out[1], dst, PAGE_SIZE, 0);
	sg_set_buf(&out[2], r->tag, sizeof(r->tag));
	aead_request_set_crypt(r->req, in, out, PAGE_SIZE, r->iv);
	err = crypto_aead_encrypt(r->req);
	if (!err)
		memcpy(tag, r->tag, sizeof(r->tag));
	return err;
}

int rswap_aead_open(struct rswap_aead_req *r, struct page *page, u64 nonce, u64 block,
		    const u8 *tag)
{
	struct scatterlist sg[3];

	rswap_aead_prepare(r, nonce, block);
	memcpy(r->tag, tag, sizeof(r->tag));
	sg_init_table(sg, 3);
	sg_set_buf(&sg[0], r->ad, sizeof(r->ad));
	sg_set_page(&sg[1], page, PAGE_SIZE, 0);
	sg_set_buf(&sg[2], r->tag, sizeof(r->tag));
	aead_request_set_crypt(r->req, sg, sg, PAGE_SIZE + sizeof(r->tag), r->iv);
	return crypto_aead_decrypt(r->req);
}

int rswap_raid6_get(struct rswap_raid6 *r)
{
	r->gen = symbol_request(raid6_gen_syndrome);
	r->recov_2data = symbol_get(raid6_recov_2data);
	r->recov_datap = symbol_get(raid6_recov_datap);
	if (r->gen && r->recov_2data && r->recov_datap)
		return 0;
	rswap_raid6_put(r);
	return -ENOENT;
}

void rswap_raid6_put(struct rswap_raid6 *r)
{
	if (r->gen)
		symbol_put(raid6_gen_syndrome);
	if (r->recov_2data)
		symbol_put(raid6_recov_2data);
	if (r->recov_datap)
		symbol_put(raid6_recov_datap);
	memset(r, 0, sizeof(*r));
}

bool rswap_raid6_context_ok(void)
{
	return in_task() && !irqs_disabled() && !softirq_count();
}

/* Most fragments of a block: 8 data and P and Q. */
#define RSWAP_RAID6_MAX 10

void rswap_raid6_gen_block(const struct rswap_raid6 *r, int k, unsigned int f, struct page *page,
			   struct page *p, unsigned int p_off, struct page *q, unsigned int q_off)
{
	void *ptrs[RSWAP_RAID6_MAX];
	u8 *d, *pp, *qq;
	int j;

	if (k < 2 || k + 2 > RSWAP_RAID6_MAX)
		return;
	d = kmap_local_page(page);
	pp = kmap_local_page(p);
	qq = kmap_local_page(q);
	for (j = 0; j < k; j++)
		ptrs[j] = d + j * f;
	ptrs[k] = pp + p_off;
	ptrs[k + 1] = qq + q_off;
	r->gen(k + 2, f, ptrs);
	kunmap_local(qq);
	kunmap_local(pp);
	kunmap_local(d);
}

void rswap_raid6_recov_block(const struct rswap_raid6 *r, int k, unsigned int f,
			     struct page *const *pages, const unsigned int *offs,
			     struct page *const *scratch, int faila, int failb)
{
	void *ptrs[RSWAP_RAID6_MAX];
	int j, n = k + 2;

	if (k < 2 || n > RSWAP_RAID6_MAX)
		return;
	for (j = 0; j < n; j++) {
		u8 *s = kmap_local_page(pages[j]);

		/* Scratch pages are the disk's own, GFP_KERNEL: never highmem. */
		ptrs[j] = page_address(scratch[j]);
		if (j == faila || j == failb)
			memset(ptrs[j], 0, f);
		else
			memcpy(ptrs[j], s + offs[j], f);
		kunmap_local(s);
	}
	if (failb < k)
		r->recov_2data(n, f, faila, failb, ptrs);
	else
		r->recov_datap(n, f, faila, ptrs);
	for (j = 0; j < k; j++) {
		if (j == faila || j == failb) {
			u8 *d = kmap_local_page(pages[j]);

			memcpy(d + offs[j], ptrs[j], f);
			kunmap_local(d);
		}
	}
}

void rswap_page_combine(struct page *dst, unsigned int dst_off, struct page *src,
			unsigned int src_off, unsigned int len, bool xor)
{
	u8 *d = kmap_local_page(dst);
	const u8 *s = kmap_local_page(src);

	if (xor)
		crypto_xor(d + dst_off, s + src_off, len);
	else
		memcpy(d + dst_off, s + src_off, len);
	kunmap_local(s);
	kunmap_local(d);
}

void rswap_sg_set_pages(struct scatterlist *sgl, struct page *const *pages, unsigned int n,
			unsigned int last)
{
	unsigned int i;

	sg_init_table(sgl, n);
	for (i = 0; i < n; i++)
		sg_set_page(&sgl[i], pages[i], i + 1 == n ? last : PAGE_SIZE, 0);
}

int rswap_inet_parse(const char *text, struct sockaddr_storage *out)
{
	int err = inet_pton_with_scope(&init_net, AF_UNSPEC, text, NULL, out);

	if (err)
		return err;
	if (out->ss_family == AF_INET) {
		__be32 a = ((struct sockaddr_in *)out)->sin_addr.s_addr;

		if (ipv4_is_zeronet(a) || ipv4_is_lbcast(a) || ipv4_is_multicast(a))
			return -EADDRNOTAVAIL;
	} else {
		const struct in6_addr *a = &((struct sockaddr_in6 *)out)->sin6_addr;

		if (ipv6_addr_any(a) || ipv6_addr_is_multicast(a))
			return -EADDRNOTAVAIL;
	}
	return 0;
}

void rswap_inet_set_port(struct sockaddr_storage *addr, u16 port)
{
	if (addr->ss_family == AF_INET)
		((struct sockaddr_in *)addr)->sin_port = htons(port);
	else if (addr->ss_family == AF_INET6)
		((struct sockaddr_in6 *)addr)->sin6_port = htons(port);
}

int rswap_inet_print(const struct sockaddr_storage *addr, bool port, char *buf, size_t len)
{
	return port ? scnprintf(buf, len, "%pISpc", addr) : scnprintf(buf, len, "%pISc", addr);
}

unsigned int rswap_memalloc_noio_save(void)
{
	return memalloc_noio_save();
}

void rswap_memalloc_noio_restore(unsigned int flags)
{
	memalloc_noio_restore(flags);
}

unsigned int rswap_memalloc_noreclaim_save(void)
{
	return memalloc_noreclaim_save();
}

void rswap_memalloc_noreclaim_restore(unsigned int flags)
{
	memalloc_noreclaim_restore(flags);
}

bool rswap_current_uses_reserves(void)
{
	return current->flags & PF_MEMALLOC;
}

static DEFINE_MUTEX(configfs_root_lock);

void rswap_configfs_root_lock(void)
{
	mutex_lock(&configfs_root_lock);
}

void rswap_configfs_root_unlock(void)
{
	mutex_unlock(&configfs_root_lock);
}

int rswap_logon_key_read(const char *desc, u8 *buf, unsigned int len)
{
#ifdef CONFIG_KEYS
	const struct user_key_payload *payload;
	struct key *key;
	int ret;

	/* No callout: a key that is not there is -ENOKEY, not an upcall to userspace. */
	key = request_key(&key_type_logon, desc, NULL);
	if (IS_ERR(key))
		return PTR_ERR(key);
	down_read(&key->sem);
	ret = key_validate(key);
	if (!ret) {
		/* NULL once the key is revoked (user_revoke). */
		payload = user_key_payload_locked(key);
		if (!payload) {
			ret = -EKEYREVOKED;
		} else {
			ret = payload->datalen;
			if (payload->datalen <= len)
				memcpy(buf, payload->data, payload->datalen);
		}
	}
	up_read(&key->sem);
	key_put(key);
	return ret;
#else
	return -EOPNOTSUPP;
#endif
}
