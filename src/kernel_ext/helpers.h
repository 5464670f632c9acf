/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for kernel_ext: the kernel crypto API's hmac(sha256) (hmac.rs) and AES-GCM
 * (aead.rs), scatterlists of whole pages (scatterlist.rs), socket addresses as the kernel
 * parses and prints them (inet.rs), and `logon` keys of the caller's keyrings (keyring.rs).
 */
#ifndef RSWAP_KERNEL_EXT_HELPERS_H
#define RSWAP_KERNEL_EXT_HELPERS_H

#include <crypto/aead.h>
#include <crypto/hash.h>
#include <linux/socket.h>

struct crypto_shash *rswap_hmac_sha256_new(const u8 *key, unsigned int len);
int rswap_hmac_sha256(struct crypto_shash *tfm, const u8 *data, unsigned int len, u8 *out);
void rswap_hmac_sha256_free(struct crypto_shash *tfm);

/* Bytes of the authentication tag of a sealed page. */
#define RSWAP_AEAD_TAG_LEN 16

/*
 * A synchronous gcm(aes) transform keyed with @key (16, 24 or 32 bytes) and 16-byte tags,
 * or an ERR_PTR. Sleeps (GFP_KERNEL).
 */
struct crypto_aead *rswap_aes_gcm_new(const u8 *key, unsigned int len);
void rswap_aes_gcm_free(struct crypto_aead *tfm);
/* The name of the implementation the crypto API picked, e.g. "generic-gcm-aesni". */
const char *rswap_aes_gcm_driver(struct crypto_aead *tfm);

/*
 * One preallocated request on a transform, with room for the associated data, nonce and
 * tag it points the crypto API at (in the linear map, as scatterlists need).
 */
struct rswap_aead_req {
	u8 ad[8];
	u8 iv[12];
	u8 tag[RSWAP_AEAD_TAG_LEN];
	struct aead_request req[];
};

/* A request on @tfm, or NULL. Sleeps (GFP_KERNEL). */
struct rswap_aead_req *rswap_aead_req_new(struct crypto_aead *tfm);
void rswap_aead_req_free(struct rswap_aead_req *r);
/*
 * Encrypts the page @src into the page @dst under the 96-bit nonce @nonce (little
 * endian, zero padded) with @block as associated data, and writes the tag to @tag.
 * Does not sleep or allocate. Returns 0 or a negative errno.
 */
int rswap_aead_seal(struct rswap_aead_req *r, struct page *src, struct page *dst, u64 nonce,
		    u64 block, u8 *tag);
/*
 * Decrypts @page in place with @nonce, @block and @tag; -EBADMSG if the tag does not
 * match (the page then holds garbage). Does not sleep or allocate.
 */
int rswap_aead_open(struct rswap_aead_req *r, struct page *page, u64 nonce, u64 block,
		    const u8 *tag);

/*
 * Points the first @n entries of @sgl at @pages, each whole but the last, which holds its
 * first @last bytes and ends the list.
 */
void rswap_sg_set_pages(struct scatterlist *sgl, struct page *const *pages, unsigned int n,
			unsigned int last);

/*
 * The RAID-6 library's functions (module raid6_pq), taken with symbol_request() so that
 * rswap.ko loads without it; each non-NULL one holds a reference to the module until
 * rswap_raid6_put().
 */
struct rswap_raid6 {
	void (*gen)(int disks, size_t bytes, void **ptrs);
	void (*recov_2data)(int disks, size_t bytes, int faila, int failb, void **ptrs);
	void (*recov_datap)(int disks, size_t bytes, int faila, void **ptrs);
};

/* Fills @r (loading raid6_pq if needed); -ENOENT (and @r empty) if any is missing. Sleeps. */
int rswap_raid6_get(struct rswap_raid6 *r);
void rswap_raid6_put(struct rswap_raid6 *r);
/* Whether the RAID-6 functions may run here: task context, interrupts and softirqs on. */
bool rswap_raid6_context_ok(void);
/*
 * P and Q of one block: @k data fragments of @f bytes at offsets j * @f of @page, P into
 * @p at @p_off, Q into @q at @q_off. @k >= 2, @f a multiple of 512 dividing PAGE_SIZE,
 * offsets multiples of 64; rswap_raid6_context_ok().
 */
void rswap_raid6_gen_block(const struct rswap_raid6 *r, int k, unsigned int f, struct page *page,
			   struct page *p, unsigned int p_off, struct page *q, unsigned int q_off);
/*
 * Rebuilds data fragment @faila (and @failb, or P if @failb is @k) of one block whose
 * @k + 2 fragments are @f bytes at @offs[j] of @pages[j] (P at index k, Q at k + 1),
 * through the @k + 2 page-aligned @scratch pages; writes the rebuilt data fragments back
 * in place. rswap_raid6_context_ok().
 */
void rswap_raid6_recov_block(const struct rswap_raid6 *r, int k, unsigned int f,
			     struct page *const *pages, const unsigned int *offs,
			     struct page *const *scratch, int faila, int failb);

/*
 * Copies (@xor false) or XORs @len bytes at @src_off of @src into @dst at @dst_off, both
 * pages mapped for the length of it. Any context.
 */
void rswap_page_combine(struct page *dst, unsigned int dst_off, struct page *src,
			unsigned int src_off, unsigned int len, bool xor);

/*
 * Parses the NUL-terminated @text into @out with port 0, as nvme-rdma parses traddr
 * (inet_pton_with_scope: a dotted quad, or IPv6 with an optional %scope). Returns 0, or
 * -EINVAL for text that is no address and -EADDRNOTAVAIL for an address that names no
 * single host (any, broadcast, multicast).
 */
int rswap_inet_parse(const char *text, struct sockaddr_storage *out);
/* Sets the port of an IPv4 or IPv6 @addr. */
void rswap_inet_set_port(struct sockaddr_storage *addr, u16 port);
/* Prints @addr (with its port if @port) into @buf as %pISc / %pISpc; returns the length. */
int rswap_inet_print(const struct sockaddr_storage *addr, bool port, char *buf, size_t len);

/* memalloc_noio_save()/restore(), memalloc_noreclaim_save()/restore() (alloc_scope.rs). */
unsigned int rswap_memalloc_noio_save(void);
void rswap_memalloc_noio_restore(unsigned int flags);
unsigned int rswap_memalloc_noreclaim_save(void);
void rswap_memalloc_noreclaim_restore(unsigned int flags);
bool rswap_current_uses_reserves(void);

/*
 * The lock under which the configfs subsystem that takes item dependencies is recorded
 * and used (configfs.rs): statically initialised, so usable before any init code runs.
 */
void rswap_configfs_root_lock(void);
void rswap_configfs_root_unlock(void);

/*
 * Looks up the `logon` key with description @desc in the calling task's keyrings
 * (request_key, no upcall) and, under the key's semaphore, copies its payload into @buf
 * if it fits in @len bytes (else copies nothing). Returns the payload's length, or
 * -ENOKEY (no such key), -EKEYREVOKED, -EKEYEXPIRED, -EACCES (not searchable by the
 * caller), -EOPNOTSUPP (a kernel without CONFIG_KEYS) or another negative errno. Sleeps.
 */
int rswap_logon_key_read(const char *desc, u8 *buf, unsigned int len);

#endif
