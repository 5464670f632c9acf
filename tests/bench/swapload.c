// SPDX-License-Identifier: GPL-2.0
/*
 * swapload: the benchmark's swap workload.
 *
 *   swapload MIB [SEED [REWRITE_S]]
 *
 * Allocates MIB MiB of anonymous memory, writes a checksummed pattern to every page, then
 * verifies every page twice (first pass forwards, second pass with a page stride so that
 * swap readahead helps less), and exits non-zero on the first mismatch. Run it in a
 * cgroup whose memory.max is below MIB so that the pages go through swap.
 *
 * With REWRITE_S, a sustained load comes between the write and the verify passes: for
 * REWRITE_S seconds it picks pages in a pseudo-random order, checks each and writes it
 * again with its next generation's pattern, so that pages keep going out to swap dirty
 * and coming back in. The verify passes then expect each page's last generation.
 *
 * SIGUSR1 ends the rewrite phase early (REWRITE_S stays its cap): the batch of 256 pages
 * in hand is finished, then the verify passes run as usual. A SIGUSR1 that arrives during
 * the write phase ends the rewrite phase as soon as it starts (no page is rewritten); one
 * that arrives during or after the verify passes changes nothing. The handler is installed
 * before anything else, so that the signal never kills the process.
 *
 * Each page holds 511 pseudo-random 64-bit words derived from (seed, page index) and, in
 * its last word, a checksum of the other 511 words mixed with the page index; a page that
 * comes back with stale, shifted or another page's content fails the check.
 *
 * SWAPLOAD_PASSES=0 or 1 in the environment runs only that many of the two verify passes
 * (after a rewrite phase, whose checks already read pages back from swap).
 *
 * SWAPLOAD_CORRUPT=1 in the environment flips one bit after the write (and rewrite) phase,
 * to show that the check catches it (exit 1).
 *
 * Prints one line of JSON on stdout: the phases' wall times, major/minor faults (getrusage)
 * and the number of bad pages.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define WORDS_PER_PAGE(ps) ((ps) / sizeof(uint64_t))

/* Set by SIGUSR1: the rewrite phase ends (or does not start). */
static volatile sig_atomic_t stop;

static void on_usr1(int sig)
{
	(void)sig;
	stop = 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* splitmix64: a cheap, well-mixed generator. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The seed of generation GEN of a page: generation 0 is the run's seed. */
static uint64_t gen_seed(uint64_t seed, uint16_t gen)
{
	return gen ? mix(seed + gen) : seed;
}

static void fill_page(uint64_t *p, size_t words, uint64_t seed, uint64_t idx)
{
	uint64_t s = mix(seed ^ (idx * 0x100000001b3ULL)), sum = idx;
	size_t i;

	for (i = 0; i < words - 1; i++) {
		s = mix(s);
		p[i] = s;
		sum = (sum ^ s) * 0x100000001b3ULL;
	}
	p[words - 1] = sum;
}

/* Returns 0 when the page holds exactly what fill_page() wrote. */
static int check_page(const uint64_t *p, size_t words, uint64_t seed, uint64_t idx)
{
	uint64_t s = mix(seed ^ (idx * 0x100000001b3ULL)), sum = idx;
	size_t i;

	for (i = 0; i < words - 1; i++) {
		s = mix(s);
		if (p[i] != s)
			return -1;
		sum = (sum ^ p[i]) * 0x100000001b3ULL;
	}
	return p[words - 1] == sum ? 0 : -1;
}

int main(int argc, char **argv)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), words = WORDS_PER_PAGE(ps);
	unsigned long mib;
	uint64_t seed, npages, i, bad = 0, first_bad = UINT64_MAX, rewrites = 0, rnd;
	double t0, t_write, t_rw, t_v1, t_v2, rewrite_s;
	const char *passes_env = getenv("SWAPLOAD_PASSES");
	int passes = passes_env ? atoi(passes_env) : 2;
	uint16_t *gen;
	struct rusage ru;
	char *mem;
	uint64_t stride;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGUSR1, &sa, NULL)) {
		fprintf(stderr, "swapload: sigaction: %s\n", strerror(errno));
		return 2;
	}

	if (argc < 2 || (mib = strtoul(argv[1], NULL, 0)) == 0) {
		fprintf(stderr, "usage: %s MIB [SEED]\n", argv[0]);
		return 2;
	}
	seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x5eed;
	rewrite_s = argc > 3 ? strtod(argv[3], NULL) : 0;
	npages = (uint64_t)mib * 1024 * 1024 / ps;
	gen = calloc(npages, sizeof(*gen));
	if (!gen) {
		fprintf(stderr, "swapload: no memory for %llu generations\n", (unsigned long long)npages);
		return 2;
	}
	mem = mmap(NULL, npages * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		fprintf(stderr, "swapload: mmap %lu MiB: %s\n", mib, strerror(errno));
		return 2;
	}

	t0 = now();
	for (i = 0; i < npages; i++)
		fill_page((uint64_t *)(mem + i * ps), words, seed, i);
	t_write = now();

	/* The rewrite phase: pseudo-random pages, checked then written again, until SIGUSR1. */
	rnd = mix(seed ^ 0x7e3a11);
	while (rewrite_s > 0 && !stop && now() - t_write < rewrite_s) {
		for (i = 0; i < 256; i++) {
			uint64_t pg;

			rnd = mix(rnd);
			pg = rnd % npages;
			if (check_page((uint64_t *)(mem + pg * ps), words, gen_seed(seed, gen[pg]), pg)) {
				if (!bad++)
					first_bad = pg;
			}
			gen[pg]++;
			fill_page((uint64_t *)(mem + pg * ps), words, gen_seed(seed, gen[pg]), pg);
			rewrites++;
		}
	}
	t_rw = now();
	/* Self-test of the checker: SWAPLOAD_CORRUPT=1 flips one bit in the middle page. */
	if (getenv("SWAPLOAD_CORRUPT"))
		((uint64_t *)(mem + (npages / 2) * ps))[7] ^= 1;

	/* Pass 1: in order. */
	for (i = 0; passes >= 1 && i < npages; i++) {
		if (check_page((uint64_t *)(mem + i * ps), words, gen_seed(seed, gen[i]), i)) {
			if (!bad++)
				first_bad = i;
		}
	}
	t_v1 = now();

	/* Pass 2: every page once, visited with a stride co-prime to npages. */
	stride = 257;
	while (npages % stride == 0)
		stride += 2;
	for (i = 0; passes >= 2 && i < npages; i++) {
		uint64_t pg = (i * stride) % npages;

		if (check_page((uint64_t *)(mem + pg * ps), words, gen_seed(seed, gen[pg]), pg)) {
			if (!bad++)
				first_bad = pg;
		}
	}
	t_v2 = now();

	getrusage(RUSAGE_SELF, &ru);
	printf("{\"mib\": %lu, \"pages\": %llu, \"write_s\": %.3f, ", mib,
	       (unsigned long long)npages, t_write - t0);
	if (rewrite_s > 0)
		printf("\"rewrite_s\": %.3f, \"rewrites\": %llu, ", t_rw - t_write,
		       (unsigned long long)rewrites);
	printf("\"verify1_s\": %.3f, \"verify2_s\": %.3f, \"total_s\": %.3f, \"majflt\": %ld, "
	       "\"minflt\": %ld, \"bad_pages\": %llu}\n",
	       t_v1 - t_rw, t_v2 - t_v1, t_v2 - t0, ru.ru_majflt, ru.ru_minflt,
	       (unsigned long long)bad);
	if (bad) {
		fprintf(stderr, "swapload: %llu bad page checks, first at page %llu\n",
			(unsigned long long)bad, (unsigned long long)first_bad);
		return 1;
	}
	return 0;
}
