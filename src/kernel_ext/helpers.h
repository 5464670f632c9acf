/* SPDX-License-Identifier: GPL-2.0 */
/* C helpers for kernel_ext: the kernel crypto API's hmac(sha256); see hmac.rs. */
#ifndef RSWAP_KERNEL_EXT_HELPERS_H
#define RSWAP_KERNEL_EXT_HELPERS_H

#include <crypto/hash.h>

struct crypto_shash *rswap_hmac_sha256_new(const u8 *key, unsigned int len);
int rswap_hmac_sha256(struct crypto_shash *tfm, const u8 *data, unsigned int len, u8 *out);
void rswap_hmac_sha256_free(struct crypto_shash *tfm);

#endif
