// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel crypto API's hmac(sha256) for rswap's in-band authentication, behind three
 * functions: the Rust side sees `struct crypto_shash` only as a pointer (see hmac.rs).
 * And socket addresses, parsed and printed as the kernel does (see inet.rs).
 */
#include <linux/err.h>
#include <linux/in.h>
#include <linux/inet.h>
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
