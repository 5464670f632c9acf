// SPDX-License-Identifier: GPL-2.0
/*
 * appqsort: `make bench-apps`'s compute job with random access.
 *
 *   appqsort MIB [SEED]
 *
 * Fills MIB MiB of anonymous memory with pseudo-random 64-bit keys, sorts them in place
 * with a quicksort (median of three, insertion sort below 16 keys, recursion on the
 * smaller side), then checks the result: every key no smaller than the one before it,
 * and the same multiset of keys as generated (an order-independent checksum). Run it in
 * a cgroup whose memory.max is below MIB to make it swap.
 *
 * Prints one JSON line: gen_s (the fill), sort_s, time_s (fill + sort: the completion
 * time the benchmark reports), check_s, sorted and checksum_ok (0 or 1), majflt. Exits 1
 * when the check fails. APPS_CORRUPT=1 in the environment swaps two keys after the sort,
 * to show that the check catches it.
 */
#include "apps.h"

static void swap(uint64_t *a, uint64_t *b)
{
	uint64_t t = *a;

	*a = *b;
	*b = t;
}

static void insertion(uint64_t *a, int64_t lo, int64_t hi)
{
	int64_t i, j;

	for (i = lo + 1; i <= hi; i++) {
		uint64_t v = a[i];

		for (j = i - 1; j >= lo && a[j] > v; j--)
			a[j + 1] = a[j];
		a[j + 1] = v;
	}
}

static void quicksort(uint64_t *a, int64_t lo, int64_t hi)
{
	while (hi - lo >= 16) {
		int64_t mid = lo + (hi - lo) / 2, i = lo, j = hi;
		uint64_t pivot;

		if (a[mid] < a[lo])
			swap(&a[mid], &a[lo]);
		if (a[hi] < a[lo])
			swap(&a[hi], &a[lo]);
		if (a[hi] < a[mid])
			swap(&a[hi], &a[mid]);
		pivot = a[mid];
		while (i <= j) {
			while (a[i] < pivot)
				i++;
			while (a[j] > pivot)
				j--;
			if (i <= j)
				swap(&a[i++], &a[j--]);
		}
		if (j - lo < hi - i) {
			quicksort(a, lo, j);
			lo = i;
		} else {
			quicksort(a, i, hi);
			hi = j;
		}
	}
	insertion(a, lo, hi);
}

int main(int argc, char **argv)
{
	unsigned long mib;
	uint64_t seed, n, i, *a;
	struct msum m0 = { 0, 0 }, m1 = { 0, 0 };
	int sorted;
	double t0, t1, t2, t3;

	if (argc < 2 || (mib = strtoul(argv[1], NULL, 0)) == 0) {
		fprintf(stderr, "usage: %s MIB [SEED]\n", argv[0]);
		return 2;
	}
	seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x5eed;
	n = (uint64_t)mib * 1024 * 1024 / sizeof(uint64_t);
	a = alloc_u64("appqsort", n);

	t0 = now();
	for (i = 0; i < n; i++) {
		a[i] = mix(seed + i);
		msum_add(&m0, a[i]);
	}
	t1 = now();
	quicksort(a, 0, (int64_t)n - 1);
	t2 = now();
	sorted = check_sorted(a, n, &m1);
	t3 = now();
	printf("{\"app\": \"qsort\", \"mib\": %lu, \"keys\": %llu, \"gen_s\": %.3f, \"sort_s\": %.3f, "
	       "\"time_s\": %.3f, \"check_s\": %.3f, \"sorted\": %d, \"checksum_ok\": %d, "
	       "\"majflt\": %ld}\n",
	       mib, (unsigned long long)n, t1 - t0, t2 - t1, t2 - t0, t3 - t2, sorted,
	       msum_equal(&m0, &m1), major_faults());
	return sorted && msum_equal(&m0, &m1) ? 0 : 1;
}
