/*
 * faultcount: a process that counts its own page faults, for the fidelity
 * check of numascope profile's samples, first touches and repeat faults
 * (internal/profile, TestSamplesAreTheProcessFaults). Written apart from
 * numascope: it reads the kernel's per-process fault counters through
 * getrusage(2), never perf.
 *
 * Usage: faultcount PAGES OUTFILE
 *
 * Phase 1 maps PAGES fresh anonymous pages and writes to each once: one
 * fault each, its first touch. Phase 2 maps PAGES more, reads each (the
 * kernel maps its shared zero page: a fault, nothing placed yet) and then
 * writes to each (a second fault on the same page, which places it): two
 * faults a page, the second on a page already faulted. It writes to
 * OUTFILE one line: the faults (minor + major) of phase 1, of phase 2, and
 * of the whole process from its exec to just before that write, as
 * getrusage counts them. Everything the write needs is touched before the
 * last count.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

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

int main(int argc, char **argv)
{
	static char line[256];
	if (argc != 3) {
		fprintf(stderr, "usage: faultcount PAGES OUTFILE\n");
		return 2;
	}
	long pages = atol(argv[1]);
	size_t len = (size_t)pages * 4096;
	int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(argv[2]);
		return 1;
	}
	memset(line, ' ', sizeof line);
	long a = faults();
	volatile char *p = fresh(len);
	for (long i = 0; i < pages; i++)
		p[i * 4096] = 1;
	long b = faults();
	volatile char *q = fresh(len);
	long sum = 0;
	for (long i = 0; i < pages; i++)
		sum += q[i * 4096];
	for (long i = 0; i < pages; i++)
		q[i * 4096] = 1;
	long c = faults();
	int n = snprintf(line, sizeof line, "%ld %ld %ld\n", b - a, c - b, faults() + sum);
	if (write(fd, line, n) != n) {
		perror("write");
		return 1;
	}
	return close(fd) == 0 ? 0 : 1;
}
