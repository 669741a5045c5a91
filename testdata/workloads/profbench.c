/*
 * profbench: the multi-threaded workload of the numascope profile slowdown
 * benchmark (scripts/bench-profile, docs/performance.md).
 *
 *   profbench --compute [--threads T] [--mb N] [--iters K] [--sweeps R]
 *   profbench --faults  [--threads T] [--mb N] [--rounds K]
 *   profbench --now     (prints CLOCK_MONOTONIC in seconds: a clock for
 *                        shells without one, such as the VM's busybox)
 * and the common --out FILE, --lead S, --linger S of workload.h.
 *
 * T threads (default: the online CPUs, unpinned) share the work:
 *   --compute  the working set of N MiB (default 64) of 64-bit words is split
 *              into T contiguous parts; each thread allocates and first-touches
 *              its own part, then makes K passes (default 8) over it, block by
 *              block: R sweeps (default 16) of an arithmetic update over each
 *              256 KiB block (L2-sized) before moving to the next. So every
 *              page is faulted once and the time goes to computing on cached
 *              data, with a pass over the whole set every R sweeps.
 *   --faults   K rounds (default 16): in each, every thread mmaps its share of
 *              N MiB (default 64), writes one word in each page (a page fault
 *              per page), reads them back and munmaps it: mostly page faults.
 * Memory is mapped with MADV_NOHUGEPAGE: every 4 KiB page is its own fault,
 * the profiler's worst case, the same whatever the machine's THP setting.
 *
 * It prints one result line, "@wl {JSON}", with the elapsed time of the
 * measured part (CLOCK_MONOTONIC, from before the threads start to after they
 * all joined: allocation, first touch and work), the process's user and system
 * CPU seconds (getrusage: under the profiler the system time grows by the
 * kernel's cost of building a sample in each fault) and a checksum that depends
 * only on N, K (and R), not on T or on scheduling, so that a test can check it
 * against the same arithmetic done independently (internal/vmtest,
 * TestProfBenchChecksum).
 */
#include "workload.h"

#include <pthread.h>
#include <sys/resource.h>

#define BLOCK_WORDS (256L * 1024 / 8)

/* The update of --compute: a 64-bit LCG step mixed with a shift (mod 2^64). */
#define LCG_MUL 6364136223846793005ULL
#define LCG_ADD 1442695040888963407ULL
#define INIT_MUL 0x9E3779B97F4A7C15ULL

struct thread {
	pthread_t th;
	long first, n; /* global word (--compute) or page (--faults) range */
	uint64_t sum;
};

static struct thread threads[1024];
static int nthreads, faults;
static long iters = 8, sweeps = 16, rounds = 16;

static void *map(long bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		wl_die("mmap %ld bytes: %s", bytes, strerror(errno));
	if (madvise(p, bytes, MADV_NOHUGEPAGE) < 0)
		wl_die("madvise(MADV_NOHUGEPAGE): %s", strerror(errno));
	return p;
}

__attribute__((noinline)) static void sweep(uint64_t *x, long n)
{
	for (long i = 0; i < n; i++) {
		uint64_t v = x[i] * LCG_MUL + LCG_ADD;
		x[i] = v ^ (v >> 29);
	}
}

static void *compute(void *arg)
{
	struct thread *t = arg;
	uint64_t *x = map(t->n * 8 > 0 ? t->n * 8 : 8);
	for (long i = 0; i < t->n; i++)
		x[i] = (uint64_t)(t->first + i) * INIT_MUL; /* first touch */
	for (long k = 0; k < iters; k++)
		for (long b = 0; b < t->n; b += BLOCK_WORDS) {
			long n = t->n - b < BLOCK_WORDS ? t->n - b : BLOCK_WORDS;
			for (long r = 0; r < sweeps; r++)
				sweep(x + b, n);
		}
	/* Weighted by position, so that a misplaced word changes the sum. */
	for (long i = 0; i < t->n; i++)
		t->sum += x[i] * (2 * (uint64_t)(t->first + i) + 1);
	munmap(x, t->n * 8 > 0 ? t->n * 8 : 8);
	return NULL;
}

static void *fault(void *arg)
{
	struct thread *t = arg;
	long bytes = t->n * PAGE;
	if (t->n == 0)
		return NULL;
	for (long r = 0; r < rounds; r++) {
		char *p = map(bytes);
		for (long j = 0; j < t->n; j++) /* one page fault each, at the line marked @fault */
			*(volatile uint64_t *)(p + j * PAGE) = (uint64_t)(t->first + j) * rounds + r + 1; /* @fault */
		for (long j = 0; j < t->n; j++)
			t->sum += *(volatile uint64_t *)(p + j * PAGE);
		if (munmap(p, bytes) < 0)
			wl_die("munmap: %s", strerror(errno));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long mb = 64, total;
	int mode = -1;
	nthreads = (int)sysconf(_SC_NPROCESSORS_ONLN);
	for (int i = 1; i < argc; i++) {
		if (wl_common(argc, argv, &i))
			continue;
		if (!strcmp(argv[i], "--now")) {
			printf("%.9f\n", wl_now());
			return 0;
		} else if (!strcmp(argv[i], "--compute"))
			mode = 0;
		else if (!strcmp(argv[i], "--faults"))
			mode = 1;
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--mb") && i + 1 < argc)
			mb = atol(argv[++i]);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atol(argv[++i]);
		else if (!strcmp(argv[i], "--sweeps") && i + 1 < argc)
			sweeps = atol(argv[++i]);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atol(argv[++i]);
		else
			wl_die("usage: profbench --compute|--faults|--now [--threads T] [--mb N] [--iters K] [--sweeps R] "
			       "[--rounds K] [--out FILE] [--lead S] [--linger S]");
	}
	if (mode < 0)
		wl_die("say --compute, --faults or --now");
	if (nthreads < 1 || nthreads > (int)(sizeof threads / sizeof threads[0]) || mb <= 0 || iters < 0 ||
	    sweeps < 0 || rounds < 0)
		wl_die("--threads must be 1-%d, --mb positive, --iters, --sweeps and --rounds not negative",
		       (int)(sizeof threads / sizeof threads[0]));
	faults = mode;
	/* Words of the working set, or pages per round. */
	total = faults ? (mb << 20) / PAGE : (mb << 20) / 8;
	wl_start();

	double t0 = wl_now();
	for (int i = 0; i < nthreads; i++) {
		threads[i].first = total * i / nthreads;
		threads[i].n = total * (i + 1) / nthreads - threads[i].first;
		if (pthread_create(&threads[i].th, NULL, faults ? fault : compute, &threads[i]))
			wl_die("pthread_create failed");
	}
	uint64_t sum = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(threads[i].th, NULL);
		sum += threads[i].sum;
	}
	double secs = wl_now() - t0;
	/* The process's own CPU time: under numascope profile, the growth of the
	 * system time is the kernel's cost of making a sample per fault. */
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6, sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	if (faults)
		wl_emit("{\"type\":\"summary\",\"workload\":\"profbench\",\"mode\":\"faults\",\"threads\":%d,\"mb\":%ld,"
			"\"rounds\":%ld,\"faults\":%ld,\"checksum\":\"%016llx\",\"seconds\":%.6f,\"user_s\":%.3f,\"sys_s\":%.3f}",
			nthreads, mb, rounds, total * rounds, (unsigned long long)sum, secs, user, sys);
	else
		wl_emit("{\"type\":\"summary\",\"workload\":\"profbench\",\"mode\":\"compute\",\"threads\":%d,\"mb\":%ld,"
			"\"iters\":%ld,\"sweeps\":%ld,\"pages\":%ld,\"checksum\":\"%016llx\",\"seconds\":%.6f,\"user_s\":%.3f,\"sys_s\":%.3f}",
			nthreads, mb, iters, sweeps, (total * 8 + PAGE - 1) / PAGE, (unsigned long long)sum, secs, user, sys);
	return wl_finish();
}
