/*
 * refchase: an independent reference for numascope bench's idle latency
 * (docs/fidelity.md). It shares no code and no design choice with
 * internal/bench beyond what the measurement itself is: the idle latency of
 * a dependent load to a line chosen uniformly at random in a buffer far
 * bigger than the caches.
 *
 *   - The buffer is split into 64-byte lines; one uniformly random cyclic
 *     permutation of all of them (Sattolo's algorithm over an index array,
 *     xoshiro256** with Lemire's unbiased bounded draw, seeded from the
 *     clock unless --seed is given) links each line to the next.
 *   - One pointer chase, p = *p, timed with clock_gettime(CLOCK_MONOTONIC).
 *
 * Build: gcc -O2 -o refchase refchase.c
 * Usage: refchase [--size BYTES] [--steps N] [--repeat R] [--cpu C]
 *                 [--thp | --no-thp] [--seed S]
 *   --size default 256M (K, M, G: binary); --steps 2097152; --repeat 3;
 *   --thp (default) asks for transparent huge pages, --no-thp forbids them.
 * Prints one line:
 *   refchase size=B lines=L steps=S thp=T huge=H median_ns=M min_ns=N ns=a,b,..
 * where H is the share of the buffer's mapping that the kernel backed with
 * transparent huge pages after the chase (AnonHugePages over Size in
 * /proc/self/smaps; -1 when smaps cannot tell): without huge pages every
 * load may also miss the TLB, and the latency is not the same quantity.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define LINE 64

/* xoshiro256** (Blackman and Vigna 2018). */
static uint64_t st[4];

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro(void)
{
	uint64_t r = rotl(st[1] * 5, 7) * 9, t = st[1] << 17;
	st[2] ^= st[0];
	st[3] ^= st[1];
	st[1] ^= st[2];
	st[0] ^= st[3];
	st[2] ^= t;
	st[3] = rotl(st[3], 45);
	return r;
}

/* below returns a uniform integer in [0, n) (Lemire 2019, unbiased). */
static uint64_t below(uint64_t n)
{
	unsigned __int128 m = (unsigned __int128)xoshiro() * n;
	uint64_t lo = (uint64_t)m;
	if (lo < n) {
		uint64_t floor = -n % n;
		while (lo < floor) {
			m = (unsigned __int128)xoshiro() * n;
			lo = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

static double seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* huge_share returns AnonHugePages / Size for the mapping holding addr in
 * /proc/self/smaps, or -1. */
static double huge_share(const void *addr)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	char line[512];
	int in = 0;
	double size = 0, share = -1;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char dash;
		if (sscanf(line, "%lx%c%lx ", &lo, &dash, &hi) == 3 && dash == '-') {
			if (in)
				break;
			in = lo <= (uintptr_t)addr && (uintptr_t)addr < hi;
			continue;
		}
		double kb;
		if (in && sscanf(line, "Size: %lf kB", &kb) == 1)
			size = kb;
		else if (in && sscanf(line, "AnonHugePages: %lf kB", &kb) == 1) {
			share = size > 0 ? kb / size : -1;
			break;
		}
	}
	fclose(f);
	return share;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static size_t bytes(const char *s)
{
	char *end;
	size_t v = strtoull(s, &end, 10);
	if (*end == 'K' || *end == 'k')
		v <<= 10;
	else if (*end == 'M' || *end == 'm')
		v <<= 20;
	else if (*end == 'G' || *end == 'g')
		v <<= 30;
	return v;
}

int main(int argc, char **argv)
{
	size_t size = 256UL << 20;
	long steps = 1L << 21;
	int repeat = 3, cpu = -1, thp = 1;
	uint64_t seed = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--thp")) { thp = 1; continue; }
		if (!strcmp(argv[i], "--no-thp")) { thp = 0; continue; }
		if (i + 1 >= argc) { fprintf(stderr, "refchase: %s needs a value\n", argv[i]); return 2; }
		const char *v = argv[++i];
		if (!strcmp(argv[i - 1], "--size")) size = bytes(v);
		else if (!strcmp(argv[i - 1], "--steps")) steps = atol(v);
		else if (!strcmp(argv[i - 1], "--repeat")) repeat = atoi(v);
		else if (!strcmp(argv[i - 1], "--cpu")) cpu = atoi(v);
		else if (!strcmp(argv[i - 1], "--seed")) seed = strtoull(v, NULL, 0);
		else { fprintf(stderr, "refchase: unknown option %s\n", argv[i - 1]); return 2; }
	}
	size_t lines = size / LINE;
	if (lines < 2 || steps < 1 || repeat < 1) { fprintf(stderr, "refchase: --size, --steps or --repeat too small\n"); return 2; }
	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof set, &set)) { perror("refchase: sched_setaffinity"); return 1; }
	}
	if (!seed)
		seed = (uint64_t)(seconds() * 1e9);
	for (int k = 0; k < 4; k++)
		st[k] = seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;

	/* 2 MiB alignment lets THP back the whole buffer. */
	size_t align = 2UL << 20;
	char *raw = mmap(NULL, lines * LINE + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) { perror("refchase: mmap"); return 1; }
	char *buf = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
	madvise(buf, lines * LINE, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);

	/* Sattolo: a uniformly random permutation with a single cycle. */
	size_t *succ = malloc(lines * sizeof *succ);
	if (!succ) { perror("refchase: malloc"); return 1; }
	for (size_t i = 0; i < lines; i++)
		succ[i] = i;
	for (size_t i = lines - 1; i > 0; i--) {
		size_t j = below(i), t = succ[i];
		succ[i] = succ[j];
		succ[j] = t;
	}
	for (size_t i = 0; i < lines; i++)
		*(char **)(buf + i * LINE) = buf + succ[i] * LINE;
	free(succ);

	char **p = (char **)buf;
	for (long s = 0; s < steps / 4; s++) /* warm-up */
		p = (char **)*p;
	double *ns = malloc(repeat * sizeof *ns), *sorted = malloc(repeat * sizeof *sorted);
	for (int r = 0; r < repeat; r++) {
		double t0 = seconds();
		for (long s = 0; s < steps; s++)
			p = (char **)*p;
		ns[r] = (seconds() - t0) * 1e9 / steps;
	}
	memcpy(sorted, ns, repeat * sizeof *ns);
	qsort(sorted, repeat, sizeof *sorted, by_value);
	double med = repeat % 2 ? sorted[repeat / 2] : (sorted[repeat / 2 - 1] + sorted[repeat / 2]) / 2;
	printf("refchase size=%zu lines=%zu steps=%ld thp=%d huge=%.3f median_ns=%.3f min_ns=%.3f ns=", lines * LINE, lines, steps, thp,
	       huge_share(buf), med, sorted[0]);
	for (int r = 0; r < repeat; r++)
		printf("%s%.3f", r ? "," : "", ns[r]);
	printf(" end=%p\n", (void *)p);
	return 0;
}
