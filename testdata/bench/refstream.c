/*
 * refstream: an independent reference for numascope bench's copy bandwidth
 * (docs/fidelity.md). It is written as John McCalpin's STREAM measures
 * copy, and shares no code and no design choice with internal/bench beyond
 * what the measurement is: the rate of c[j] = a[j] over arrays far bigger
 * than the caches, by every thread at once, counting 16 bytes an element
 * (the load and the store; not the write-allocate's read).
 *
 *   - OpenMP: one parallel loop, schedule(static), so each thread copies
 *     one contiguous block; the threads are placed by OpenMP's own binding
 *     (OMP_PLACES, OMP_PROC_BIND) and wait between passes at libgomp's
 *     barrier, as STREAM's do.
 *   - Each pass is timed with omp_get_wtime around the parallel loop, the
 *     fork and the join included, as STREAM times it.
 *   - The arrays are first touched by the same static schedule, so each
 *     thread's block lies where that thread touched it; mmap'd, and with
 *     --thp asked to be backed by transparent huge pages.
 *   - Built with -fno-tree-loop-distribute-patterns, so that the compiler
 *     keeps the loop (vectorised, with ordinary stores) rather than call
 *     memcpy, whose non-temporal stores for large copies would move fewer
 *     bytes than STREAM counts.
 *
 * Build: gcc -O3 -mavx2 -fopenmp -fno-tree-loop-distribute-patterns
 *            -o refstream refstream.c
 * Usage: refstream [--size BYTES] [--passes N] [--thp | --no-thp] [--stepped]
 *   --size: bytes per array (default 256M; K, M, G binary); --passes 10.
 *   Threads and places: OMP_NUM_THREADS, OMP_PLACES, OMP_PROC_BIND.
 *   --stepped: after the first touch print "ready huge=S", then run one
 *   pass for each line read on standard input and print its MB/s on a line
 *   of its own, until the input ends (a test interleaves passes so). Each
 *   such pass is preceded by an empty parallel region, untimed: the
 *   threads have slept while waiting for the line, and STREAM's passes,
 *   back to back, find them spinning at libgomp's barrier, not asleep.
 * Prints one line:
 *   refstream size=B threads=T thp=H huge=S best_mbs=X median_mbs=M mbs=a,b,..
 * MB/s are 10^6 bytes a second; the first pass is not counted (STREAM's
 * rule), best and median are over the counted ones, listed in order. S is
 * the share of the two arrays that the kernel backed with transparent huge
 * pages (their AnonHugePages over their Size in /proc/self/smaps; -1 when
 * smaps cannot tell).
 */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static size_t parse_size(const char *s) {
	char *end;
	double v = strtod(s, &end);
	switch (*end) {
	case 'K': case 'k': v *= 1024; break;
	case 'M': case 'm': v *= 1024 * 1024; break;
	case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
	}
	return (size_t)v;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* huge_share: AnonHugePages over Size of the mappings that hold a or c. */
static double huge_share(const void *a, const void *c) {
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	char line[512];
	double size = 0, huge = 0, kb;
	int in = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			in = ((unsigned long)a >= lo && (unsigned long)a < hi) || ((unsigned long)c >= lo && (unsigned long)c < hi);
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, "Size: %lf kB", &kb) == 1)
			size += kb;
		else if (sscanf(line, "AnonHugePages: %lf kB", &kb) == 1)
			huge += kb;
	}
	fclose(f);
	return size > 0 ? huge / size : -1;
}

static double *array(size_t bytes, int thp) {
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("refstream: mmap");
		exit(1);
	}
	madvise(p, bytes, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	return p;
}

/* pass: one timed copy by every thread, in MB/s. */
static double pass(const double *restrict a, double *restrict c, long n) {
	double t = omp_get_wtime();
#pragma omp parallel for schedule(static)
	for (long j = 0; j < n; j++)
		c[j] = a[j];
	t = omp_get_wtime() - t;
	return 2.0 * sizeof(double) * n / t / 1e6;
}

int main(int argc, char **argv) {
	size_t size = 256u << 20;
	int passes = 10, thp = 1, stepped = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--stepped")) { stepped = 1; continue; }
		if (!strcmp(argv[i], "--thp")) { thp = 1; continue; }
		if (!strcmp(argv[i], "--no-thp")) { thp = 0; continue; }
		if (i + 1 >= argc) {
			fprintf(stderr, "refstream: %s needs a value\n", argv[i]);
			return 2;
		}
		if (!strcmp(argv[i], "--size")) size = parse_size(argv[++i]);
		else if (!strcmp(argv[i], "--passes")) passes = atoi(argv[++i]);
		else {
			fprintf(stderr, "refstream: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	long n = (long)(size / sizeof(double));
	if (n < 1024 || passes < 2) {
		fprintf(stderr, "refstream: want --size of 8K or more and --passes of 2 or more\n");
		return 2;
	}
	double *a = array(n * sizeof(double), thp), *c = array(n * sizeof(double), thp);
	int threads = 1;
#pragma omp parallel
	{
#pragma omp single
		threads = omp_get_num_threads();
	}
#pragma omp parallel for schedule(static)
	for (long j = 0; j < n; j++) {
		a[j] = 1.0;
		c[j] = 0.0;
	}

	if (stepped) {
		printf("ready huge=%.3f\n", huge_share(a, c));
		fflush(stdout);
		char line[64];
		while (fgets(line, sizeof line, stdin)) {
#pragma omp parallel
			{
			}
			printf("%.1f\n", pass(a, c, n));
			fflush(stdout);
		}
		return 0;
	}
	double *mbs = malloc(passes * sizeof(double));
	for (int k = 0; k < passes; k++)
		mbs[k] = pass(a, c, n);
	/* Every element must have been copied: a check the compiler cannot drop. */
	for (long j = 0; j < n; j += 4099)
		if (c[j] != 1.0) {
			fprintf(stderr, "refstream: c[%ld] = %g after the copy\n", j, c[j]);
			return 1;
		}

	int counted = passes - 1;
	double *sorted = malloc(counted * sizeof(double));
	memcpy(sorted, mbs + 1, counted * sizeof(double));
	qsort(sorted, counted, sizeof(double), cmp);
	double median = counted % 2 ? sorted[counted / 2] : (sorted[counted / 2 - 1] + sorted[counted / 2]) / 2;
	printf("refstream size=%zu threads=%d thp=%d huge=%.3f best_mbs=%.1f median_mbs=%.1f mbs=", n * sizeof(double), threads, thp,
	       huge_share(a, c), sorted[counted - 1], median);
	for (int k = 1; k < passes; k++)
		printf("%s%.1f", k > 1 ? "," : "", mbs[k]);
	printf("\n");
	return 0;
}
