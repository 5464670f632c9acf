// SPDX-License-Identifier: GPL-2.0
/*
 * kvload: `make bench-apps`'s client of a key-value store: Redis under a skewed load.
 *
 *   kvload HOST PORT KEYS VALUE_BYTES OPS [SEED [THETA [GET_PERCENT]]]
 *
 * Speaks Redis's protocol (RESP) over TCP to HOST:PORT, in three phases:
 *   fill    SET of KEYS keys ("key:N") with VALUE_BYTES-byte values, 32 commands in flight;
 *   run     OPS requests one at a time, each a GET (GET_PERCENT, default 90) or a SET of
 *           the key's next version, on keys drawn from a Zipfian distribution (THETA,
 *           default 0.99, as YCSB) whose ranks are scattered over the key space, so that
 *           the hot keys do not sit together in the server's memory; every request's
 *           latency is measured from its send to its whole reply;
 *   verify  GET of every key, 32 in flight.
 * Every value read (in run and verify) must be the last one written to its key: the
 * value is a function of (SEED, key, version) and the client keeps each key's version.
 * Values are words from a small vocabulary, so they compress (about 2-3x with lz4), like
 * text does.
 *
 * Prints one JSON line: keys, value_bytes, fill_s, ops, run_s, ops_per_s, p50_us, p99_us,
 * max_us, verify_s, checked (values read and compared), bad (wrong or missing values),
 * time_s (run_s: the benchmark's completion time of the load). Exits 1 when a value was
 * wrong or missing, 2 on a usage or connection error, 3 when the server answered with an
 * error. KVLOAD_CORRUPT=1 expects a wrong version of one key in the verify phase, to show
 * that the check catches it.
 */
#include "apps.h"

#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#define WINDOW 32

static int fd;
static char rbuf[1 << 16];
static size_t rpos, rlen;
static char *wbuf;
static size_t wlen, wcap;

static void die(int code, const char *what)
{
	fprintf(stderr, "kvload: %s\n", what);
	exit(code);
}

static void put(const void *p, size_t n)
{
	if (wlen + n > wcap) {
		wcap = (wlen + n) * 2;
		wbuf = realloc(wbuf, wcap);
		if (!wbuf)
			die(2, "out of memory");
	}
	memcpy(wbuf + wlen, p, n);
	wlen += n;
}

static void flush_out(void)
{
	size_t off = 0;

	while (off < wlen) {
		ssize_t r = write(fd, wbuf + off, wlen - off);

		if (r <= 0)
			die(2, "write to the server failed");
		off += r;
	}
	wlen = 0;
}

static int getbyte(void)
{
	if (rpos == rlen) {
		ssize_t r = read(fd, rbuf, sizeof(rbuf));

		if (r <= 0)
			die(2, "the server closed the connection");
		rpos = 0;
		rlen = r;
	}
	return (unsigned char)rbuf[rpos++];
}

/* One line of a reply, without its CRLF, into line (at most cap - 1 bytes kept). */
static void getline_crlf(char *line, size_t cap)
{
	size_t n = 0;
	int c, prev = 0;

	while ((c = getbyte()) != '\n' || prev != '\r') {
		if (n + 1 < cap)
			line[n++] = (char)c;
		prev = c;
	}
	line[n ? n - 1 : 0] = 0;
}

static void command(int argc, const char **argv, const size_t *len)
{
	char head[32];
	int i;

	put(head, snprintf(head, sizeof(head), "*%d\r\n", argc));
	for (i = 0; i < argc; i++) {
		put(head, snprintf(head, sizeof(head), "$%zu\r\n", len[i]));
		put(argv[i], len[i]);
		put("\r\n", 2);
	}
}

/* The reply to a SET: +OK. */
static void reply_ok(void)
{
	char line[256];

	getline_crlf(line, sizeof(line));
	if (strcmp(line, "+OK")) {
		fprintf(stderr, "kvload: SET answered: %s\n", line);
		exit(3);
	}
}

/* The reply to a GET into val (its length, or -1 for no such key). */
static long reply_bulk(char *val, size_t cap)
{
	char line[256];
	long n, i;

	getline_crlf(line, sizeof(line));
	if (line[0] != '$') {
		fprintf(stderr, "kvload: GET answered: %s\n", line);
		exit(3);
	}
	n = strtol(line + 1, NULL, 10);
	if (n < 0)
		return -1;
	for (i = 0; i < n; i++) {
		int c = getbyte();

		if ((size_t)i < cap)
			val[i] = (char)c;
	}
	getbyte();
	getbyte();
	return n;
}

static const char *const words[16] = {
	"memory ", "remote ", "swap ", "page ", "server ", "client ", "queue ", "block ",
	"region ", "latency ", "the ", "of ", "and ", "a ", "to ", "in ",
};

/* The value of (seed, key, version): a header naming both, then words. */
static void make_value(char *v, size_t len, uint64_t seed, uint64_t key, uint32_t ver)
{
	uint64_t s = mix(seed ^ (key * 0x100000001b3ULL) ^ ((uint64_t)ver << 40));
	size_t n = (size_t)snprintf(v, len, "key=%llu ver=%u ", (unsigned long long)key, ver);

	while (n < len) {
		const char *w = words[s & 15];
		size_t wl = strlen(w);

		s = mix(s);
		if (wl > len - n)
			wl = len - n;
		memcpy(v + n, w, wl);
		n += wl;
	}
}

/* YCSB's Zipfian generator (Gray et al., "Quickly generating billion-record synthetic
 * databases"), ranks 0..n-1, rank 0 the most frequent. */
struct zipf {
	double theta, alpha, zetan, eta, zeta2;
	uint64_t n;
};

static void zipf_init(struct zipf *z, uint64_t n, double theta)
{
	uint64_t i;

	z->n = n;
	z->theta = theta;
	z->zetan = 0;
	for (i = 1; i <= n; i++)
		z->zetan += 1.0 / pow((double)i, theta);
	z->zeta2 = 1.0 + 1.0 / pow(2.0, theta);
	z->alpha = 1.0 / (1.0 - theta);
	z->eta = (1.0 - pow(2.0 / n, 1.0 - theta)) / (1.0 - z->zeta2 / z->zetan);
}

static uint64_t zipf_next(const struct zipf *z, uint64_t *rnd)
{
	double u, uz;
	uint64_t r;

	*rnd = mix(*rnd);
	u = (double)(*rnd >> 11) / 9007199254740992.0;
	uz = u * z->zetan;
	if (uz < 1.0)
		return 0;
	if (uz < z->zeta2)
		return 1;
	r = (uint64_t)(z->n * pow(z->eta * u - z->eta + 1.0, z->alpha));
	return r < z->n ? r : z->n - 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void connect_to(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	int one = 1;

	if (getaddrinfo(host, port, &hints, &ai))
		die(2, "cannot resolve the server's address");
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen))
		die(2, "cannot connect to the server");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	freeaddrinfo(ai);
}

int main(int argc, char **argv)
{
	uint64_t keys, ops, seed = 0x5eed, rnd, i, bad = 0, checked = 0, done;
	size_t vlen;
	double theta = 0.99, t0, t1, t2, t3, *lat;
	int get_pct = 90;
	uint32_t *ver;
	char *val, *got, key[32];
	struct zipf z;

	if (argc < 6) {
		fprintf(stderr, "usage: %s HOST PORT KEYS VALUE_BYTES OPS [SEED [THETA [GET_PERCENT]]]\n",
			argv[0]);
		return 2;
	}
	keys = strtoull(argv[3], NULL, 0);
	vlen = strtoul(argv[4], NULL, 0);
	ops = strtoull(argv[5], NULL, 0);
	if (argc > 6)
		seed = strtoull(argv[6], NULL, 0);
	if (argc > 7)
		theta = strtod(argv[7], NULL);
	if (argc > 8)
		get_pct = atoi(argv[8]);
	if (keys < 2 || vlen < 32 || theta <= 0 || theta >= 1)
		die(2, "KEYS >= 2, VALUE_BYTES >= 32, 0 < THETA < 1");
	ver = calloc(keys, sizeof(*ver));
	lat = calloc(ops ? ops : 1, sizeof(*lat));
	val = malloc(vlen);
	got = malloc(vlen);
	if (!ver || !lat || !val || !got)
		die(2, "out of memory");
	zipf_init(&z, keys, theta);
	connect_to(argv[1], argv[2]);

	/* fill: WINDOW SETs in flight. */
	t0 = now();
	for (i = 0, done = 0; i < keys; i++) {
		const char *av[3] = { "SET", key, val };
		size_t len[3] = { 3, 0, vlen };

		len[1] = (size_t)snprintf(key, sizeof(key), "key:%llu", (unsigned long long)i);
		make_value(val, vlen, seed, i, 0);
		command(3, av, len);
		if (i + 1 - done == WINDOW || i + 1 == keys) {
			flush_out();
			for (; done <= i; done++)
				reply_ok();
		}
	}
	t1 = now();

	/* run: one request at a time, Zipfian keys scattered by a hash of their rank. */
	rnd = mix(seed ^ 0x21f);
	for (i = 0; i < ops; i++) {
		uint64_t k = mix(zipf_next(&z, &rnd) ^ seed) % keys;
		int is_get = (int)(mix(rnd ^ i) % 100) < get_pct;
		size_t len[3] = { 3, 0, vlen };
		const char *av[3] = { is_get ? "GET" : "SET", key, val };
		double s;
		long n;

		len[1] = (size_t)snprintf(key, sizeof(key), "key:%llu", (unsigned long long)k);
		if (!is_get)
			make_value(val, vlen, seed, k, ++ver[k]);
		s = now();
		command(is_get ? 2 : 3, av, len);
		flush_out();
		if (is_get) {
			n = reply_bulk(got, vlen);
			lat[i] = now() - s;
			make_value(val, vlen, seed, k, ver[k]);
			checked++;
			if (n != (long)vlen || memcmp(got, val, vlen))
				bad++;
		} else {
			reply_ok();
			lat[i] = now() - s;
		}
	}
	t2 = now();

	/* verify: every key, WINDOW GETs in flight. */
	if (getenv("KVLOAD_CORRUPT"))
		ver[keys / 2]++;
	for (i = 0, done = 0; i < keys; i++) {
		const char *av[2] = { "GET", key };
		size_t len[2] = { 3, 0 };

		len[1] = (size_t)snprintf(key, sizeof(key), "key:%llu", (unsigned long long)i);
		command(2, av, len);
		if (i + 1 - done == WINDOW || i + 1 == keys) {
			flush_out();
			for (; done <= i; done++) {
				long n = reply_bulk(got, vlen);

				make_value(val, vlen, seed, done, ver[done]);
				checked++;
				if (n != (long)vlen || memcmp(got, val, vlen))
					bad++;
			}
		}
	}
	t3 = now();

	qsort(lat, ops, sizeof(*lat), cmp_double);
	printf("{\"app\": \"kv\", \"keys\": %llu, \"value_bytes\": %zu, \"theta\": %.2f, "
	       "\"get_percent\": %d, \"fill_s\": %.3f, \"ops\": %llu, \"run_s\": %.3f, "
	       "\"ops_per_s\": %.1f, \"p50_us\": %.1f, \"p99_us\": %.1f, \"max_us\": %.1f, "
	       "\"verify_s\": %.3f, \"checked\": %llu, \"bad\": %llu, \"time_s\": %.3f}\n",
	       (unsigned long long)keys, vlen, theta, get_pct, t1 - t0, (unsigned long long)ops,
	       t2 - t1, ops ? ops / (t2 - t1) : 0.0, ops ? lat[ops / 2] * 1e6 : 0.0,
	       ops ? lat[(ops * 99) / 100] * 1e6 : 0.0, ops ? lat[ops - 1] * 1e6 : 0.0, t3 - t2,
	       (unsigned long long)checked, (unsigned long long)bad, t2 - t1);
	if (bad)
		fprintf(stderr, "kvload: %llu of %llu values read back were wrong or missing\n",
			(unsigned long long)bad, (unsigned long long)checked);
	return bad ? 1 : 0;
}
