// SPDX-License-Identifier: GPL-2.0
/*
 * The benchmark links its own copy of the C helpers of the layers it compiles
 * (KBUILD_MODNAME differs): the RDMA layer's and kernel_ext's.
 */
#include <linux/sort.h>
#include "../../src/ib/helpers.c"
#include "../../src/kernel_ext/helpers.c"

void rswap_bench_sort_u64(u64 *base, size_t num);

static int rswap_bench_cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Sorts @num u64 values at @base in ascending order with the kernel's sort() (heapsort:
 * no recursion, no allocation). The benchmark's percentiles use it rather than core's
 * sort_unstable, whose quicksort objtool flags ("falls through to next function").
 */
void rswap_bench_sort_u64(u64 *base, size_t num)
{
	sort(base, num, sizeof(*base), rswap_bench_cmp_u64, NULL);
}
