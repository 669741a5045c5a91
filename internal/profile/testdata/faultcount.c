/*
 * faultcount: a process that counts its own page faults, for the fidelity
 * check of numascope profile's samples, lost records, first touches and
 * repeat faults (internal/profile, TestSamplesAreTheProcessFaults). Written
 * apart from numascope: it reads the kernel's per-process fault counters
 * through getrusage(2), never perf.
 *
 * Usage: faultcount PAGES OUTFILE [THREADS]
 *
 * Phase 1 maps PAGES fresh anonymous pages and writes to each once: one
 * fault each, its first touch. Phase 2 maps PAGES more, reads each (the
 * kernel maps its shared zero page: a fault, nothing placed yet) and then
 * writes to each (a second fault on the same page, which places it): two
 * faults a page, the second on a page already faulted. With THREADS (default
 * 1), each phase's pages are split among that many threads, which run at
 * once, started and joined inside the phase. It writes to OUTFILE one line:
 * the faults (minor + major) of phase 1, of phase 2, and of the whole
 * process (every thread) from its exec to just before that write, as
 * getrusage counts them. Everything the write needs is touched before the
 * last count.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define MAXTHREADS 64

struct slice {
	volatile char *p;
	long pages;
	int readfirst;
	long sum;
};

static long faults(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt + ru.ru_majflt;
}

static char *fresh(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	/* Base pages whatever the machine's transparent huge page setting:
	 * one fault per page. */
	madvise(p, len, MADV_NOHUGEPAGE);
	return p;
}

static void *work(void *arg)
{
	struct slice *s = arg;
	if (s->readfirst)
		for (long i = 0; i < s->pages; i++)
			s->sum += s->p[i * 4096];
	for (long i = 0; i < s->pages; i++)
		s->p[i * 4096] = 1;
	return NULL;
}

/* phase touches PAGES fresh pages with THREADS threads; it returns the sum
 * of what was read, so that the reads are not optimised away. */
static long phase(long pages, int threads, int readfirst)
{
	volatile char *p = fresh((size_t)pages * 4096);
	struct slice s[MAXTHREADS];
	pthread_t tid[MAXTHREADS];
	long per = pages / threads, sum = 0;
	for (int t = 0; t < threads; t++) {
		s[t] = (struct slice){p + (size_t)t * per * 4096, t == threads - 1 ? pages - t * per : per, readfirst, 0};
		if (threads == 1)
			work(&s[t]);
		else if (pthread_create(&tid[t], NULL, work, &s[t]) != 0) {
			perror("pthread_create");
			exit(1);
		}
	}
	for (int t = 0; t < threads; t++) {
		if (threads > 1)
			pthread_join(tid[t], NULL);
		sum += s[t].sum;
	}
	return sum;
}

int main(int argc, char **argv)
{
	static char line[256];
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: faultcount PAGES OUTFILE [THREADS]\n");
		return 2;
	}
	long pages = atol(argv[1]);
	int threads = argc == 4 ? atoi(argv[3]) : 1;
	if (threads < 1 || threads > MAXTHREADS) {
		fprintf(stderr, "faultcount: THREADS %d: from 1 to %d\n", threads, MAXTHREADS);
		return 2;
	}
	int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(argv[2]);
		return 1;
	}
	memset(line, ' ', sizeof line);
	long a = faults();
	long sum = phase(pages, threads, 0);
	long b = faults();
	sum += phase(pages, threads, 1);
	long c = faults();
	int n = snprintf(line, sizeof line, "%ld %ld %ld\n", b - a, c - b, faults() + sum);
	if (write(fd, line, n) != n) {
		perror("write");
		return 1;
	}
	return close(fd) == 0 ? 0 : 1;
}
