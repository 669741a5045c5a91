/*
 * profnuma: known answers for numascope profile, by source line.
 *
 *   profnuma --serial|--parallel [--unpinned] [--crash] [--thp] [--malloc] [--again]
 *            [--memset|--memcpy] [--pin-cpu C] [--membind M] [--mb N] [--seconds S] [--until-sampled] [--until FILE] [--out FILE] [--lead S] [--linger S]
 *
 * One worker thread per node with CPUs owns a buffer of N MiB (default 16) of
 * small pages, pinned to its node's CPUs (unless --unpinned).
 *   --serial    the main thread (pinned to the first node unless --unpinned)
 *               first-touches every buffer, in init_buffer at the line marked
 *               @init;
 *   --parallel  each worker first-touches its own buffer at that same line.
 * Then every worker writes one word of each page of its buffer, over and over
 * for --seconds (default 4), at the line marked @compute: with NUMA balancing
 * on, its hinting faults are taken there. With --until-sampled they go on
 * until each has taken, while computing, at least as many faults (its
 * thread's minor faults, getrusage) as its buffer has pages: every page
 * sampled about once, however slowly a busy machine runs the scanner and the
 * workers (balancing must be on, and the buffers of small pages). With
 * --until FILE they go on (for at least --seconds) until FILE exists: a test
 * keeps the program, and so its pages, until the profiler has looked at them.
 *   --thp       the buffers are 2 MiB-aligned and madvise(MADV_HUGEPAGE), so
 *               that (THP permitting) one fault places 512 base pages.
 *   --crash     after the first touch, the main thread dereferences NULL at the
 *               line marked @crash (the program dies of SIGSEGV).
 *   --malloc    the buffers come from malloc, called at the line marked @alloc
 *               (otherwise from mmap in wl_alloc, or thp_alloc with --thp).
 *   --again     after the first touch, the buffers are given back and touched
 *               again: freed and malloc'ed anew with --malloc (glibc unmaps and
 *               maps them), otherwise madvise(MADV_DONTNEED); so @init places
 *               every page twice.
 *   --memset    the first touch is a call to libc's memset, at the line marked
 *               @memset instead of @init;
 *   --memcpy    it is a memcpy of a page-sized pattern into each page, at the
 *               line marked @memcpy: numascope must name these calls into libc,
 *               not libc's code, nor the caller of init_buffer.
 *   --pin-cpu C the main thread first pins itself to CPU C, at the line marked
 *               @pin.
 * profnuma starts with the default memory policy, whatever it inherited: a
 * profiler bound to one node with MPOL_BIND (so that the NUMA balancing
 * scanner skips its memory and its own hinting faults stay out of the
 * kernel's counters) hands that policy down.
 *   --membind M all memory comes from node M (MPOL_BIND, with
 *               MPOL_F_NUMA_BALANCING so that balancing still samples it),
 *               e.g. a CPU-less (CXL-like) node: every access is remote.
 * Workers run on 1 MiB stacks without transparent huge pages, whose top the
 * main thread first-touches (spawn), and the main thread first touches 64 KiB
 * of its own stack at the start (touch_stack), so that the marked lines'
 * first touches are exactly the buffers.
 * Built with -g, numascope profile's tests find the marked lines in this file
 * and expect every first touch at @init (or @memset, @memcpy) and every
 * sampled access at @compute.
 */
#include "workload.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>

struct worker {
	pthread_t th;
	int node;
	char *buf;
	long passes;
	long faults; /* the thread's minor faults while computing */
};

static struct worker workers[MAX_NODES];
static int nworkers, parallel = -1, unpinned, crash, thp, use_malloc, again;
static enum { INIT_LOOP, INIT_MEMSET, INIT_MEMCPY } init_with;
/* pattern is what --memcpy copies: initialised, so it lies in .data, and on a
 * page of its own, touched before the first touch starts. */
static char pattern[PAGE] __attribute__((aligned(PAGE))) = {1};
/* chunk is how much of it each memcpy copies: volatile, or the compiler
 * would copy inline instead of calling libc. */
static volatile long chunk = PAGE;
static long len;
static double seconds = 4;
static pthread_barrier_t touched;
static atomic_int stop;
static int until_sampled;
static const char *until_file;
static atomic_int sampled; /* workers that took a fault per page while computing */

#define HUGE (2L << 20)

/* thp_alloc maps a 2 MiB-aligned buffer that asks for transparent huge pages. */
static char *thp_alloc(long n)
{
	char *p = mmap(NULL, n + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		wl_die("mmap %ld bytes: %s", n, strerror(errno));
	p = (char *)(((unsigned long)p + HUGE - 1) & ~(HUGE - 1));
	if (madvise(p, n, MADV_HUGEPAGE) < 0)
		wl_die("madvise(MADV_HUGEPAGE): %s", strerror(errno));
	return p;
}

/* malloc_buffer is the allocation site of --malloc. */
__attribute__((noinline)) static char *malloc_buffer(long n)
{
	char *p = malloc(n); /* @alloc */
	if (!p)
		wl_die("malloc %ld bytes failed", n);
	return p;
}

static char *alloc_buffer(void)
{
	return thp ? thp_alloc(len) : use_malloc ? malloc_buffer(len) : wl_alloc(len);
}

__attribute__((noinline)) static void init_buffer(char *buf, long n)
{
	if (init_with == INIT_MEMSET) {
		memset(buf, 1, n); /* @memset */
		return;
	}
	if (init_with == INIT_MEMCPY) {
		for (long off = 0; off < n; off += PAGE)
			memcpy(buf + off, pattern, chunk); /* @memcpy */
		return;
	}
	for (long off = 0; off < n; off += PAGE)
		((volatile char *)buf)[off] = 1; /* @init */
}

static long minor_faults(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_THREAD, &ru) ? 0 : ru.ru_minflt;
}

__attribute__((noinline)) static void compute(struct worker *w)
{
	long base = minor_faults();
	int counted = !until_sampled;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (long off = 0; off < len; off += PAGE)
			((volatile char *)w->buf)[off] += 1; /* @compute */
		w->passes++;
		if (!counted && minor_faults() - base >= len / PAGE) {
			counted = 1;
			atomic_fetch_add(&sampled, 1);
		}
	}
	w->faults = minor_faults() - base;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	if (!unpinned)
		wl_pin(w->node);
	if (parallel)
		init_buffer(w->buf, len);
	pthread_barrier_wait(&touched);
	compute(w);
	return NULL;
}

/* spawn starts w's thread on a stack that never gets transparent huge pages.
 * Linux before 6.8 may back a pthread stack with one (MAP_STACK did not yet
 * imply MADV_NOHUGEPAGE), and the worker's first touches would then count 512
 * pages beyond its buffer, now and then. The top STACK_TOUCHED bytes, all a
 * worker uses, are first-touched here, so that each worker's own first
 * touches are exactly its buffer. */
#define STACK_TOUCHED (64L << 10)
static void spawn(struct worker *w)
{
	const size_t size = 1L << 20;
	char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0); /* @stack */
	if (stack == MAP_FAILED)
		wl_die("mmap a thread stack: %s", strerror(errno));
	if (madvise(stack, size, MADV_NOHUGEPAGE) < 0)
		wl_die("madvise(MADV_NOHUGEPAGE) on a thread stack: %s", strerror(errno));
	for (size_t off = size - STACK_TOUCHED; off < size; off += PAGE)
		((volatile char *)stack)[off] = 0;
	pthread_attr_t attr;
	if (pthread_attr_init(&attr) || pthread_attr_setstack(&attr, stack, size) ||
	    pthread_create(&w->th, &attr, work, w))
		wl_die("pthread_create failed");
	pthread_attr_destroy(&attr);
}

/* touch_stack first-touches the STACK_TOUCHED bytes of the main thread's
 * stack below its caller, so that no call later first-touches a stack page:
 * a call at a marked line could, where the randomised top of the stack makes
 * its return address cross into a new page (not seen so far: the extra page
 * once seen at @memset was libc's code, see main). */
static __attribute__((noinline)) void touch_stack(void)
{
	volatile char pad[STACK_TOUCHED];
	for (long off = 0; off < STACK_TOUCHED; off += PAGE)
		pad[off] = 0;
	(void)pad[0];
}

int main(int argc, char **argv)
{
	if (syscall(SYS_set_mempolicy, WL_MPOL_DEFAULT, NULL, 0) < 0)
		wl_die("set_mempolicy(MPOL_DEFAULT): %s", strerror(errno));
	touch_stack();
	/* Map every page mapped so far (the program's code and data, libc's,
	 * ld.so's, the stack) without faults: a call at a marked line would
	 * otherwise now and then take the fault on the code page of the libc
	 * routine it calls, one page more at that line (fault-around maps a
	 * file's neighbouring pages in 64 KiB windows, and where the window
	 * falls depends on where libc was loaded). mlockall populates the page
	 * tables; they stay after munlockall. */
	if (mlockall(MCL_CURRENT) == 0)
		munlockall();
	long mb = 16;
	for (int i = 1; i < argc; i++) {
		if (wl_common(argc, argv, &i))
			continue;
		if (!strcmp(argv[i], "--serial"))
			parallel = 0;
		else if (!strcmp(argv[i], "--parallel"))
			parallel = 1;
		else if (!strcmp(argv[i], "--unpinned"))
			unpinned = 1;
		else if (!strcmp(argv[i], "--crash"))
			crash = 1;
		else if (!strcmp(argv[i], "--thp"))
			thp = 1;
		else if (!strcmp(argv[i], "--malloc"))
			use_malloc = 1;
		else if (!strcmp(argv[i], "--again"))
			again = 1;
		else if (!strcmp(argv[i], "--memset"))
			init_with = INIT_MEMSET;
		else if (!strcmp(argv[i], "--memcpy"))
			init_with = INIT_MEMCPY;
		else if (!strcmp(argv[i], "--pin-cpu") && i + 1 < argc) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(atoi(argv[++i]), &set);
			if (sched_setaffinity(0, sizeof set, &set) < 0) /* @pin */
				wl_die("sched_setaffinity to CPU %s: %s", argv[i], strerror(errno));
		} else if (!strcmp(argv[i], "--membind") && i + 1 < argc) {
			unsigned long mask[MAX_NODES / 64 + 1] = {0};
			int m = atoi(argv[++i]);
			if (m < 0 || m >= MAX_NODES)
				wl_die("--membind %s: not a node", argv[i]);
			mask[m / 64] |= 1UL << (m % 64);
			if (syscall(SYS_set_mempolicy, WL_MPOL_BIND | WL_MPOL_F_NUMA_BALANCING, mask, MAX_NODES + 1) < 0)
				wl_die("set_mempolicy(MPOL_BIND|MPOL_F_NUMA_BALANCING, node %d): %s", m, strerror(errno));
		}
		else if (!strcmp(argv[i], "--mb") && i + 1 < argc)
			mb = atol(argv[++i]);
		else if (!strcmp(argv[i], "--until-sampled"))
			until_sampled = 1;
		else if (!strcmp(argv[i], "--until") && i + 1 < argc)
			until_file = argv[++i];
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else
			wl_die("usage: profnuma --serial|--parallel [--unpinned] [--crash] [--thp] [--malloc] [--again] "
			       "[--memset|--memcpy] [--pin-cpu C] [--membind M] [--mb N] [--seconds S] [--until-sampled] [--until FILE] [--out FILE] [--lead S] [--linger S]");
	}
	if (parallel < 0)
		wl_die("say --serial or --parallel");
	if (mb <= 0 || seconds < 0 || (thp && mb % 2))
		wl_die("--mb must be positive (even with --thp), --seconds not negative");
	if (thp && (use_malloc || again))
		wl_die("--thp goes with neither --malloc nor --again");
	if (again && parallel)
		wl_die("--again goes with --serial");
	pattern[PAGE - 1] = 1;
	wl_start();

	int ids[MAX_NODES];
	nworkers = wl_cpu_nodes(ids);
	len = mb << 20;
	pthread_barrier_init(&touched, NULL, nworkers + 1);
	for (int i = 0; i < nworkers; i++)
		workers[i] = (struct worker){.node = ids[i], .buf = alloc_buffer()};
	if (!parallel) {
		if (!unpinned)
			wl_pin(ids[0]);
		for (int i = 0; i < nworkers; i++)
			init_buffer(workers[i].buf, len);
		for (int i = 0; again && i < nworkers; i++) {
			if (use_malloc) {
				free(workers[i].buf);
				workers[i].buf = alloc_buffer();
			} else if (madvise(workers[i].buf, len, MADV_DONTNEED) < 0)
				wl_die("madvise(MADV_DONTNEED): %s", strerror(errno));
			init_buffer(workers[i].buf, len);
		}
	}
	if (crash) {
		fflush(stdout);
		*(volatile int *)0 = 0; /* @crash */
	}
	for (int i = 0; i < nworkers; i++)
		spawn(&workers[i]);
	pthread_barrier_wait(&touched);
	wl_sleep(seconds);
	while (until_sampled && atomic_load(&sampled) < nworkers)
		wl_sleep(0.01);
	while (until_file && access(until_file, F_OK) != 0)
		wl_sleep(0.01);
	atomic_store(&stop, 1);
	long passes = 0;
	/* faults: each worker's minor faults while computing, in worker
	 * order (one per node with CPUs, lowest first): with NUMA balancing
	 * on, its hinting faults at @compute, which a test holds against the
	 * profile's accesses by that worker's node. */
	char faults[MAX_NODES * 24 + 2] = "[";
	for (int i = 0; i < nworkers; i++) {
		pthread_join(workers[i].th, NULL);
		passes += workers[i].passes;
		size_t n = strlen(faults);
		snprintf(faults + n, sizeof faults - n, "%s%ld", i ? "," : "", workers[i].faults);
	}
	strcat(faults, "]");
	wl_emit("{\"type\":\"summary\",\"workload\":\"profnuma\",\"mode\":\"%s\",\"workers\":%d,"
		"\"pages_per_worker\":%ld,\"passes\":%ld,\"faults\":%s,\"seconds\":%.3f}",
		parallel ? "parallel" : "serial", nworkers, len / PAGE, passes, faults, wl_elapsed());
	return wl_finish();
}
