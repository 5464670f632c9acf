// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel crypto API's hmac(sha256) for rswap's in-band authentication, behind three
 * functions: the Rust side sees `struct crypto_shash` only as a pointer (see hmac.rs).
 */
#include <linux/err.h>
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
