/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for kernel_ext: the kernel crypto API's hmac(sha256) (hmac.rs) and socket
 * addresses as the kernel parses and prints them (inet.rs).
 */
#ifndef RSWAP_KERNEL_EXT_HELPERS_H
#define RSWAP_KERNEL_EXT_HELPERS_H

#include <crypto/hash.h>
#include <linux/socket.h>

struct crypto_shash *rswap_hmac_sha256_new(const u8 *key, unsigned int len);
int rswap_hmac_sha256(struct crypto_shash *tfm, const u8 *data, unsigned int len, u8 *out);
void rswap_hmac_sha256_free(struct crypto_shash *tfm);

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

#endif
