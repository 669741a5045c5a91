/*
 * refloaded: an independent reference for numascope bench's loaded latency
 * (docs/fidelity.md). It shares no code and no design choice with
 * internal/bench beyond what the measurement is: the latency of a
 * dependent load to a random line, on one CPU, while other CPUs read
 * memory at a given rate, and the rate they read at meanwhile.
 *
 *   - The chase: the calling thread, pinned to --chase-cpu, links the
 *     64-byte lines of its buffer in one random cycle (Sattolo's algorithm,
 *     splitmix64 with a multiply-shift bounded draw) and follows it,
 *     p = *p, timed with clock_gettime(CLOCK_MONOTONIC).
 *   - The readers: one pthread per CPU of --inject-cpus, each pinned with
 *     pthread_setaffinity_np, summing 64-bit integers over its own block of
 *     one shared array (s += a[j]: a loop the compiler vectorises), 64 KiB
 *     at a time, and counting 8 bytes per element read.
 *   - The rate is paced by the clock, not by a delay: asked for R MB/s, a
 *     reader with n readers beside it waits after each block until the
 *     clock says it has read no more than R/n MB/s since it started. Asked
 *     for "full", it never waits.
 *   - Between measurements the readers sleep on a condition variable, so
 *     that another program may use their CPUs (a test takes turns with
 *     numascope, both under SCHED_FIFO).
 *   - A measurement starts once every reader has read a block since it was
 *     told to start, and counts the bytes all of them read from the chase's
 *     first load to its last.
 *
 * Build: gcc -O3 -march=native -funroll-loops -pthread -o refloaded refloaded.c
 * Usage: refloaded --chase-cpu C --inject-cpus A,B,.. [--size BYTES]
 *                  [--loads N] [--thp | --no-thp]
 *   --size: the chase's buffer and the readers' array, each (default 256M;
 *   K, M, G binary); --loads 524288 dependent loads per measurement.
 * After building the chain, touching the arrays (each reader its own
 * block) and one untimed chase, it prints "ready huge=S", S the share of
 * the two mappings the kernel backed with transparent huge pages
 * (AnonHugePages over Size in /proc/self/smaps; -1 when it cannot tell).
 * Then, for each line read on standard input, one measurement:
 *   idle       no reader runs
 *   full       every reader at full rate
 *   R          the readers paced to R MB/s together (10^6 bytes a second)
 * and a line "lat_ns=L mbs=B": L the chase's nanoseconds per load, B what
 * the readers read during it, in MB/s. It ends when the input does.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define LINE 64
#define BLOCK (64 * 1024 / sizeof(uint64_t))

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t sm_state;

static uint64_t splitmix64(void)
{
	uint64_t z = (sm_state += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static void pin(pthread_t th, int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	int err = pthread_setaffinity_np(th, sizeof set, &set);
	if (err) {
		fprintf(stderr, "refloaded: pinning to CPU %d: %s\n", cpu, strerror(err));
		exit(1);
	}
}

static void *map(size_t bytes, int thp)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("refloaded: mmap");
		exit(1);
	}
	madvise(p, bytes, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	return p;
}

/* huge_share: AnonHugePages over Size of the mappings holding a and b. */
static double huge_share(const void *a, const void *b)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	char line[512];
	int in = 0;
	double size = 0, huge = 0, kb;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char dash;
		if (sscanf(line, "%lx%c%lx ", &lo, &dash, &hi) == 3 && dash == '-') {
			in = ((uintptr_t)a >= lo && (uintptr_t)a < hi) || ((uintptr_t)b >= lo && (uintptr_t)b < hi);
			continue;
		}
		if (in && sscanf(line, "Size: %lf kB", &kb) == 1)
			size += kb;
		else if (in && sscanf(line, "AnonHugePages: %lf kB", &kb) == 1)
			huge += kb;
	}
	fclose(f);
	return size > 0 ? huge / size : -1;
}

/* A reader's state: written by it, read by the chase; a line of its own. */
struct reader {
	_Alignas(64) _Atomic uint64_t bytes;
	_Atomic uint64_t blocks;
	uint64_t *a;
	size_t n;
	int cpu;
	pthread_t th;
	uint64_t sum;
	char pad[64];
};

static struct reader *readers;
static int nreaders;

/* The order all readers follow: which measurement (gen), at what rate
 * (0: full), and whether to stop. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER, done = PTHREAD_COND_INITIALIZER;
static uint64_t gen;
static double rate_bpns; /* bytes per ns per reader; 0: full rate */
static _Atomic int stop;
static int stopped, touched;

static void *read_loop(void *arg)
{
	struct reader *r = arg;
	pin(pthread_self(), r->cpu);
	for (size_t j = 0; j < r->n; j++)
		r->a[j] = j;
	pthread_mutex_lock(&mu);
	touched++;
	pthread_cond_broadcast(&done);
	uint64_t seen = 0;
	for (;;) {
		while (gen == seen)
			pthread_cond_wait(&go, &mu);
		seen = gen;
		double rate = rate_bpns;
		pthread_mutex_unlock(&mu);
		uint64_t t0 = now_ns(), read = 0;
		size_t pos = 0;
		while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
			size_t m = r->n - pos < BLOCK ? r->n - pos : BLOCK;
			const uint64_t *a = r->a + pos;
			uint64_t s = 0;
			for (size_t j = 0; j < m; j++)
				s += a[j];
			r->sum += s;
			pos = pos + m == r->n ? 0 : pos + m;
			read += m * sizeof(uint64_t);
			atomic_store_explicit(&r->bytes, atomic_load_explicit(&r->bytes, memory_order_relaxed) + m * sizeof(uint64_t), memory_order_release);
			atomic_store_explicit(&r->blocks, atomic_load_explicit(&r->blocks, memory_order_relaxed) + 1, memory_order_release);
			if (rate > 0)
				while (now_ns() - t0 < (uint64_t)(read / rate) && !atomic_load_explicit(&stop, memory_order_relaxed))
					;
		}
		pthread_mutex_lock(&mu);
		stopped++;
		pthread_cond_broadcast(&done);
	}
	return NULL;
}

static uint64_t all_bytes(void)
{
	uint64_t b = 0;
	for (int i = 0; i < nreaders; i++)
		b += atomic_load_explicit(&readers[i].bytes, memory_order_acquire);
	return b;
}

static void *chase(void *p, long loads)
{
	for (long i = 0; i < loads; i++)
		p = *(void **)p;
	return p;
}

int main(int argc, char **argv)
{
	size_t size = 256UL << 20;
	long loads = 1L << 19;
	int thp = 1, chase_cpu = -1;
	char *cpus = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--thp")) { thp = 1; continue; }
		if (!strcmp(argv[i], "--no-thp")) { thp = 0; continue; }
		if (i + 1 >= argc) { fprintf(stderr, "refloaded: %s needs a value\n", argv[i]); return 2; }
		const char *k = argv[i], *v = argv[++i];
		char *end;
		if (!strcmp(k, "--size")) {
			size = strtoull(v, &end, 10);
			if (*end == 'K' || *end == 'k') size <<= 10;
			else if (*end == 'M' || *end == 'm') size <<= 20;
			else if (*end == 'G' || *end == 'g') size <<= 30;
		} else if (!strcmp(k, "--loads")) loads = atol(v);
		else if (!strcmp(k, "--chase-cpu")) chase_cpu = atoi(v);
		else if (!strcmp(k, "--inject-cpus")) cpus = strdup(v);
		else { fprintf(stderr, "refloaded: unknown option %s\n", k); return 2; }
	}
	if (chase_cpu < 0 || !cpus || loads <= 0 || size < LINE * 2) {
		fprintf(stderr, "usage: refloaded --chase-cpu C --inject-cpus A,B,.. [--size BYTES] [--loads N] [--thp|--no-thp]\n");
		return 2;
	}
	for (char *c = cpus; *c; c++)
		nreaders += *c == ',';
	nreaders++;
	readers = aligned_alloc(64, nreaders * sizeof *readers);
	memset(readers, 0, nreaders * sizeof *readers);

	pin(pthread_self(), chase_cpu);
	/* The chain: Sattolo's shuffle of the line indices, then each line
	 * holds the address of the next in the cycle. */
	char *buf = map(size, thp);
	size_t lines = size / LINE;
	uint32_t *idx = malloc(lines * sizeof *idx);
	for (size_t i = 0; i < lines; i++)
		idx[i] = i;
	sm_state = 0x2545f4914f6cdd1du;
	for (size_t i = lines - 1; i > 0; i--) {
		size_t j = (size_t)(((unsigned __int128)splitmix64() * i) >> 64); /* [0, i) */
		uint32_t t = idx[i];
		idx[i] = idx[j];
		idx[j] = t;
	}
	for (size_t i = 0; i < lines; i++)
		*(void **)(buf + (size_t)idx[i] * LINE) = buf + (size_t)idx[(i + 1) % lines] * LINE;
	free(idx);
	void *p = buf;

	/* The readers' array, each its block. */
	uint64_t *arr = map(size, thp);
	size_t per = size / sizeof(uint64_t) / nreaders;
	char *tok = strtok(cpus, ",");
	for (int i = 0; i < nreaders; i++, tok = strtok(NULL, ",")) {
		readers[i].cpu = atoi(tok);
		readers[i].a = arr + i * per;
		readers[i].n = per;
		if (pthread_create(&readers[i].th, NULL, read_loop, &readers[i])) {
			perror("refloaded: pthread_create");
			return 1;
		}
	}
	pthread_mutex_lock(&mu);
	while (touched < nreaders)
		pthread_cond_wait(&done, &mu);
	pthread_mutex_unlock(&mu);
	p = chase(p, loads);
	printf("ready huge=%.3f\n", huge_share(buf, arr));
	fflush(stdout);

	char line[128];
	while (fgets(line, sizeof line, stdin)) {
		int idle = !strncmp(line, "idle", 4), full = !strncmp(line, "full", 4);
		double mbs = idle || full ? 0 : strtod(line, NULL);
		if (!idle && !full && mbs <= 0) {
			fprintf(stderr, "refloaded: %.*s: want idle, full or a rate in MB/s\n", (int)strcspn(line, "\n"), line);
			return 2;
		}
		uint64_t started[nreaders > 0 ? nreaders : 1];
		if (!idle) {
			for (int i = 0; i < nreaders; i++)
				started[i] = atomic_load_explicit(&readers[i].blocks, memory_order_acquire);
			pthread_mutex_lock(&mu);
			atomic_store(&stop, 0);
			stopped = 0;
			rate_bpns = mbs * 1e6 / 1e9 / nreaders;
			gen++;
			pthread_cond_broadcast(&go);
			pthread_mutex_unlock(&mu);
			for (int i = 0; i < nreaders; i++)
				while (atomic_load_explicit(&readers[i].blocks, memory_order_acquire) == started[i])
					sched_yield();
		}
		uint64_t b0 = all_bytes(), t0 = now_ns();
		p = chase(p, loads);
		uint64_t t1 = now_ns(), b1 = all_bytes();
		if (!idle) {
			atomic_store(&stop, 1);
			pthread_mutex_lock(&mu);
			while (stopped < nreaders)
				pthread_cond_wait(&done, &mu);
			pthread_mutex_unlock(&mu);
		}
		printf("lat_ns=%.3f mbs=%.1f\n", (double)(t1 - t0) / loads, (double)(b1 - b0) / (double)(t1 - t0) * 1e3);
		fflush(stdout);
	}
	/* Keep the chase and the sums live. */
	uint64_t sum = 0;
	for (int i = 0; i < nreaders; i++)
		sum += readers[i].sum;
	return p == NULL && sum == 1;
}
