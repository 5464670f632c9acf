/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers of `make bench-apps`'s own programs (the C files beside this one): a
 * clock, a well-mixed generator, an order-independent checksum, anonymous memory.
 */
#ifndef RSWAP_BENCH_APPS_H
#define RSWAP_BENCH_APPS_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

static inline double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* splitmix64 */
static inline uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/*
 * A checksum of a multiset of 64-bit values that does not depend on their order: the sum
 * and the xor of their mixes. A sort that loses, duplicates or changes a value changes it.
 */
struct msum {
	uint64_t sum, xor;
};

static inline void msum_add(struct msum *m, uint64_t v)
{
	uint64_t h = mix(v);

	m->sum += h;
	m->xor ^= h;
}

static inline int msum_equal(const struct msum *a, const struct msum *b)
{
	return a->sum == b->sum && a->xor == b->xor;
}

/*
 * The output check of the sorts: whether a[0..n) is sorted, every key added to *m. With
 * APPS_CORRUPT in the environment it first swaps two keys, to show that the check
 * catches it.
 */
static inline int check_sorted(uint64_t *a, uint64_t n, struct msum *m)
{
	uint64_t i, t;
	int sorted = 1;

	if (getenv("APPS_CORRUPT")) {
		t = a[n / 3];
		a[n / 3] = a[n / 2];
		a[n / 2] = t;
	}
	for (i = 0; i < n; i++) {
		if (i && a[i - 1] > a[i])
			sorted = 0;
		msum_add(m, a[i]);
	}
	return sorted;
}

/* Anonymous memory the size of n values, or exit 2. */
static inline uint64_t *alloc_u64(const char *prog, uint64_t n)
{
	void *p = mmap(NULL, n * sizeof(uint64_t), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		fprintf(stderr, "%s: mmap %llu values: %s\n", prog, (unsigned long long)n,
			strerror(errno));
		exit(2);
	}
	return p;
}

static inline long major_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_majflt;
}

#endif
