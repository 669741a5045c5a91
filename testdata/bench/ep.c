/*
 * ep: an EP-like (NAS Parallel Benchmarks "Embarrassingly Parallel") compute
 * kernel, the workload of scripts/bench-ep (the NUMAscope paper's overhead
 * figure: how much a monitor slows down a compute-bound, all-cores job).
 *
 * Pairs of uniform numbers in (-1, 1) come from NAS's linear congruential
 * generator (x <- 5^13 x mod 2^46, seed 271828183); the Marsaglia polar
 * method turns each pair with t = x^2 + y^2 <= 1 into two Gaussian deviates
 * X, Y, and the pair is counted in annulus l = floor(max(|X|, |Y|)), l < 10.
 * No memory traffic to speak of: it measures stolen CPU time, not bandwidth.
 *
 * The work is split into blocks of 65536 pairs; block b starts at the
 * generator's state 2*65536*b steps on (computed by jumping, as NAS does), so
 * the counts do not depend on the number of threads: they are the checksum
 * (internal/benchtest checks them against a Go rendering of the same
 * arithmetic).
 *
 * Build: gcc -O2 -static -pthread -o ep ep.c -lm
 * Usage: ep [-t THREADS] [-n PAIRS]
 *   THREADS: default every online CPU; PAIRS: default 2^24 (K, M, G suffixes
 *   multiply by 2^10, 2^20, 2^30).
 * Prints one line:
 *   ep threads=T pairs=N wall_s=W accepted=A counts=q0,q1,...,q9
 * wall_s is the threads' start to their join (CLOCK_MONOTONIC).
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 65536
#define NQ 10
#define MASK46 ((1ULL << 46) - 1)
#define A 1220703125ULL /* 5^13 */
#define SEED 271828183ULL

static uint64_t npairs, nblocks;
static uint64_t next_block; /* taken with __atomic_fetch_add */

struct result {
	uint64_t q[NQ];
} __attribute__((aligned(64)));

/* pow_a returns A^n mod 2^46: products wrap mod 2^64, a multiple of 2^46. */
static uint64_t pow_a(uint64_t n)
{
	uint64_t r = 1, b = A;
	while (n) {
		if (n & 1)
			r = (r * b) & MASK46;
		b = (b * b) & MASK46;
		n >>= 1;
	}
	return r;
}

static void *worker(void *arg)
{
	struct result *res = arg;
	const double scale = 1.0 / (double)(1ULL << 46);
	for (;;) {
		uint64_t b = __atomic_fetch_add(&next_block, 1, __ATOMIC_RELAXED);
		if (b >= nblocks)
			break;
		uint64_t x = (SEED * pow_a(2 * BLOCK * b)) & MASK46;
		uint64_t n = npairs - b * BLOCK;
		if (n > BLOCK)
			n = BLOCK;
		for (uint64_t i = 0; i < n; i++) {
			x = (x * A) & MASK46;
			double u = 2.0 * (double)x * scale - 1.0;
			x = (x * A) & MASK46;
			double v = 2.0 * (double)x * scale - 1.0;
			double t = u * u + v * v;
			if (t <= 1.0 && t > 0.0) {
				double f = sqrt(-2.0 * log(t) / t);
				double gx = fabs(u * f), gy = fabs(v * f);
				int l = (int)(gx > gy ? gx : gy);
				if (l < NQ)
					res->q[l]++;
			}
		}
	}
	return NULL;
}

static uint64_t parse_count(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);
	switch (*end) {
	case 'K': v <<= 10; end++; break;
	case 'M': v <<= 20; end++; break;
	case 'G': v <<= 30; end++; break;
	}
	if (end == s || *end || v == 0) {
		fprintf(stderr, "ep: bad pair count %s: give e.g. 16M or 1000000\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long threads = sysconf(_SC_NPROCESSORS_ONLN);
	npairs = 1ULL << 24;
	int opt;
	while ((opt = getopt(argc, argv, "t:n:")) != -1) {
		switch (opt) {
		case 't':
			threads = atol(optarg);
			break;
		case 'n':
			npairs = parse_count(optarg);
			break;
		default:
			fprintf(stderr, "usage: ep [-t THREADS] [-n PAIRS]\n");
			return 2;
		}
	}
	if (threads < 1 || threads > 4096) {
		fprintf(stderr, "ep: bad thread count: give 1 to 4096\n");
		return 2;
	}
	nblocks = (npairs + BLOCK - 1) / BLOCK;
	pthread_t *tid = calloc((size_t)threads, sizeof *tid);
	struct result *res = aligned_alloc(64, (size_t)threads * sizeof *res);
	if (!tid || !res) {
		fprintf(stderr, "ep: out of memory\n");
		return 1;
	}
	memset(res, 0, (size_t)threads * sizeof *res);

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < threads; i++)
		if (pthread_create(&tid[i], NULL, worker, &res[i])) {
			fprintf(stderr, "ep: cannot start thread %ld\n", i);
			return 1;
		}
	for (long i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	uint64_t q[NQ] = {0}, acc = 0;
	for (long i = 0; i < threads; i++)
		for (int l = 0; l < NQ; l++)
			q[l] += res[i].q[l];
	for (int l = 0; l < NQ; l++)
		acc += q[l];
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("ep threads=%ld pairs=%llu wall_s=%.6f accepted=%llu counts=", threads,
	       (unsigned long long)npairs, wall, (unsigned long long)acc);
	for (int l = 0; l < NQ; l++)
		printf("%s%llu", l ? "," : "", (unsigned long long)q[l]);
	printf("\n");
	return 0;
}
