// SPDX-License-Identifier: GPL-2.0
/*
 * appstream: `make bench-apps`'s job with streaming access, the pattern of an external
 * sort of a large file.
 *
 *   appstream MIB [SEED]
 *
 * Holds MIB MiB of anonymous memory as two buffers of MIB/2 each: it writes pseudo-random
 * 64-bit keys into the first (the "file"), sorts it in 1 MiB runs (each run sorted where
 * it lies, as an external sort forms its runs), then merges pairs of runs into the other
 * buffer, pass after pass, until one run is left: each merge pass reads the whole input
 * buffer from start to end and writes the whole output buffer once, two sequential
 * streams in and one out. Then it checks the result as appqsort does: sorted, and the
 * same multiset of keys (an order-independent checksum).
 *
 * Prints one JSON line: gen_s, runs_s (forming the runs), merge_s, passes, time_s (all
 * three: the completion time the benchmark reports), check_s, sorted, checksum_ok,
 * majflt. Exits 1 when the check fails. APPS_CORRUPT=1 swaps two keys of the result.
 */
#include "apps.h"

#define RUN_KEYS (1024 * 1024 / sizeof(uint64_t))

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Merge a[lo..mid) and a[mid..hi) into out[lo..hi). */
static void merge(const uint64_t *a, uint64_t *out, uint64_t lo, uint64_t mid, uint64_t hi)
{
	uint64_t i = lo, j = mid, k = lo;

	while (i < mid && j < hi)
		out[k++] = a[j] < a[i] ? a[j++] : a[i++];
	while (i < mid)
		out[k++] = a[i++];
	while (j < hi)
		out[k++] = a[j++];
}

int main(int argc, char **argv)
{
	unsigned long mib;
	uint64_t seed, n, i, w, *a, *b, *t;
	struct msum m0 = { 0, 0 }, m1 = { 0, 0 };
	int sorted, passes = 0;
	double t0, t1, t2, t3, t4;

	if (argc < 2 || (mib = strtoul(argv[1], NULL, 0)) < 2) {
		fprintf(stderr, "usage: %s MIB [SEED]   (MIB >= 2)\n", argv[0]);
		return 2;
	}
	seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x5eed;
	n = (uint64_t)mib / 2 * 1024 * 1024 / sizeof(uint64_t);
	a = alloc_u64("appstream", n);
	b = alloc_u64("appstream", n);

	t0 = now();
	for (i = 0; i < n; i++) {
		a[i] = mix(seed ^ (i * 0x100000001b3ULL));
		msum_add(&m0, a[i]);
	}
	t1 = now();
	for (i = 0; i < n; i += RUN_KEYS)
		qsort(a + i, n - i < RUN_KEYS ? n - i : RUN_KEYS, sizeof(uint64_t), cmp_u64);
	t2 = now();
	for (w = RUN_KEYS; w < n; w *= 2) {
		for (i = 0; i < n; i += 2 * w) {
			uint64_t mid = i + w < n ? i + w : n, hi = i + 2 * w < n ? i + 2 * w : n;

			merge(a, b, i, mid, hi);
		}
		t = a;
		a = b;
		b = t;
		passes++;
	}
	t3 = now();
	sorted = check_sorted(a, n, &m1);
	t4 = now();
	printf("{\"app\": \"stream\", \"mib\": %lu, \"keys\": %llu, \"gen_s\": %.3f, \"runs_s\": %.3f, "
	       "\"merge_s\": %.3f, \"passes\": %d, \"time_s\": %.3f, \"check_s\": %.3f, "
	       "\"sorted\": %d, \"checksum_ok\": %d, \"majflt\": %ld}\n",
	       mib, (unsigned long long)n, t1 - t0, t2 - t1, t3 - t2, passes, t3 - t0, t4 - t3,
	       sorted, msum_equal(&m0, &m1), major_faults());
	return sorted && msum_equal(&m0, &m1) ? 0 : 1;
}
