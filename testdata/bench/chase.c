/*
 * chase: the C twin of numascope bench's page-local latency chain
 * (--chain page-local; docs/performance.md, scripts/bench-numa), for
 * comparing the speed of the two chase loops over the very same loads. It is
 * no reference for the idle latency: a page-local chain measures a fraction
 * of the DRAM latency (issue 30); refchase.c is that reference. It builds
 * exactly numascope's page-local chain (internal/bench chain.go,
 * BuildPageLocalChain): the buffer's 4 KiB pages in a random order and, inside each,
 * its cache lines in a random order, both from splitmix64 seeded with
 * 0x6e756d6173636f70 and the same Fisher-Yates shuffle; each line holds the
 * address of the next. Then, pinned to one CPU and with the buffer bound to
 * one node, it follows the chain: one warm-up pass, then REPEAT timed runs
 * of STEPS dependent loads, and prints each run's ns per load and their
 * median.
 *
 * Build: gcc -O2 -static -pthread -o chase chase.c
 * Usage: chase [--size BYTES] [--line BYTES] [--cpu C] [--node N]
 *              [--steps S] [--repeat R] [--no-thp] [--order K]
 *   --size default 256M (K, M, G suffixes: binary); --line 64;
 *   --steps default max(lines, 2^21), numascope's; --repeat 5;
 *   --order K prints the byte offsets of the chain's first K lines and
 *   exits (internal/bench's test compares them with Go's).
 * Prints: chase size=B line=L steps=S thp=T median_ns=M ns=a,b,c...
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define HUGE (2UL << 20)
#define SEED 0x6e756d6173636f70ULL
#define MPOL_BIND 2
#define MPOL_MF_STRICT 1

static uint64_t rng_s;

static uint64_t next(void)
{
	uint64_t z = (rng_s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void shuffle(uint32_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)(next() % (uint64_t)(i + 1));
		uint32_t t = p[i];
		p[i] = p[j];
		p[j] = t;
	}
}

static size_t parse_size(const char *s)
{
	char *end;
	size_t v = strtoull(s, &end, 10);
	switch (*end) {
	case 'k': case 'K': v <<= 10; break;
	case 'm': case 'M': v <<= 20; break;
	case 'g': case 'G': v <<= 30; break;
	}
	return v;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The chase, eight dependent loads per turn, as numascope's. */
static void *__attribute__((noinline)) chase(void *p, long steps)
{
	void **q = p;
	for (; steps >= 8; steps -= 8) {
		q = *q; q = *q; q = *q; q = *q;
		q = *q; q = *q; q = *q; q = *q;
	}
	for (; steps > 0; steps--)
		q = *q;
	return q;
}

int main(int argc, char **argv)
{
	size_t size = 256UL << 20, line = 64;
	int cpu = -1, node = -1, repeat = 5, thp = 1;
	long steps = 0, order = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--no-thp")) { thp = 0; continue; }
		if (!v) { fprintf(stderr, "chase: %s needs a value\n", a); return 2; }
		i++;
		if (!strcmp(a, "--size")) size = parse_size(v);
		else if (!strcmp(a, "--line")) line = parse_size(v);
		else if (!strcmp(a, "--cpu")) cpu = atoi(v);
		else if (!strcmp(a, "--node")) node = atoi(v);
		else if (!strcmp(a, "--steps")) steps = atol(v);
		else if (!strcmp(a, "--repeat")) repeat = atoi(v);
		else if (!strcmp(a, "--order")) order = atol(v);
		else { fprintf(stderr, "chase: unknown option %s\n", a); return 2; }
	}
	size = (size + PAGE - 1) / PAGE * PAGE;
	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof set, &set)) { perror("chase: sched_setaffinity"); return 1; }
	}
	char *m = mmap(NULL, size + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) { perror("chase: mmap"); return 1; }
	char *buf = (char *)(((uintptr_t)m + HUGE - 1) & ~(HUGE - 1));
	madvise(buf, size, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	if (node >= 0) {
		unsigned long mask[16] = {0};
		mask[node / 64] = 1UL << (node % 64);
		if (syscall(SYS_mbind, buf, size, MPOL_BIND, mask, 16 * 64 + 1, MPOL_MF_STRICT)) { perror("chase: mbind"); return 1; }
	}
	size_t pages = size / PAGE, per = PAGE / line, lines = pages * per;
	uint32_t *porder = malloc(pages * sizeof *porder), *lorder = malloc(per * sizeof *lorder);
	rng_s = SEED;
	shuffle(porder, pages);
	long first = -1, prev = -1, k = 0;
	for (size_t pg = 0; pg < pages; pg++) {
		shuffle(lorder, per);
		for (size_t l = 0; l < per; l++) {
			long off = (long)porder[pg] * PAGE + (long)lorder[l] * (long)line;
			if (k < order)
				printf("%ld\n", off);
			k++;
			if (prev >= 0)
				*(void **)(buf + prev) = buf + off;
			else
				first = off;
			prev = off;
		}
	}
	if (order)
		return 0;
	*(void **)(buf + prev) = buf + first;
	if (steps <= 0)
		steps = lines > (1UL << 21) ? (long)lines : 1L << 21;
	void *p = chase(buf + first, (long)lines);
	double *ns = malloc(repeat * sizeof *ns), *sorted = malloc(repeat * sizeof *sorted);
	for (int r = 0; r < repeat; r++) {
		double t0 = now_ns();
		p = chase(p, steps);
		ns[r] = (now_ns() - t0) / steps;
	}
	memcpy(sorted, ns, repeat * sizeof *ns);
	qsort(sorted, repeat, sizeof *sorted, cmp);
	double med = repeat % 2 ? sorted[repeat / 2] : (sorted[repeat / 2 - 1] + sorted[repeat / 2]) / 2;
	printf("chase size=%zu line=%zu steps=%ld thp=%d median_ns=%.3f ns=", size, line, steps, thp, med);
	for (int r = 0; r < repeat; r++)
		printf("%s%.3f", r ? "," : "", ns[r]);
	printf(" end=%p\n", p);
	return 0;
}
