/*
 * refstream: an independent reference for numascope bench's bandwidth
 * (docs/fidelity.md). It is written as John McCalpin's STREAM measures
 * copy, and shares no code and no design choice with internal/bench beyond
 * what the measurement is: the rate of a loop over arrays far bigger than
 * the caches, by every thread at once, counting 8 bytes for each array
 * element the loop names (not the write-allocate's read):
 *
 *   copy   c[j] = a[j]               16 bytes
 *   triad  c[j] = a[j] + b[j]*d[j]   32 bytes (likwid-bench's triad, as
 *                                    numascope's; STREAM's has 3 arrays)
 *   load   s += a[j]                 8 bytes
 *   store  c[j] = 1                  8 bytes
 *
 * and the same with non-temporal (streaming) stores, which bypass the
 * caches and so move no write-allocate read, counted as the ordinary ones:
 *
 *   nt-store, copy-nt, triad-nt      8, 16, 32 bytes
 *
 * written with the compiler's intrinsics (_mm256_stream_pd where the
 * target has AVX, _mm_stream_pd otherwise) over whole vectors, each
 * thread's loop followed by an sfence inside the timed region, as a
 * streaming store is complete only once fenced.
 *
 *   - OpenMP: one parallel loop, schedule(static), so each thread copies
 *     one contiguous block; the threads are placed by OpenMP's own binding
 *     (OMP_PLACES, OMP_PROC_BIND) and wait between passes at libgomp's
 *     barrier, as STREAM's do.
 *   - Each pass is timed with omp_get_wtime around the parallel loop, the
 *     fork and the join included, as STREAM times it.
 *   - The arrays are first touched by the same static schedule, in one
 *     loop over all of them as STREAM initialises them, so each thread's
 *     block lies where that thread touched it; each mmap'd on its own,
 *     and with --thp asked to be backed by transparent huge pages.
 *   - The arrays do not start at the same offset in a page: array i starts
 *     i * --offset bytes (default 4288, 4 KiB and three lines) after its
 *     mapping's page-aligned start, as STREAM's arrays, declared one after
 *     another, do not either (10^7 elements: 1024 bytes apart in a page).
 *     Page-aligned alike, the kernels that read two streams or more read
 *     7-19% under numascope's on the AMD build machine; offset, within 2%
 *     (copy, triad, triad-nt, 2026-12-07).
 *   - Built with -fno-tree-loop-distribute-patterns, so that the compiler
 *     keeps the loop (vectorised, with ordinary stores) rather than call
 *     memcpy, whose non-temporal stores for large copies would move fewer
 *     bytes than STREAM counts.
 *
 * Build: gcc -O3 -march=native -fopenmp -fno-tree-loop-distribute-patterns
 *            -ffp-contract=off -funroll-loops -o refstream refstream.c
 * Usage: refstream [--kernel copy|triad|load|store|nt-store|copy-nt|triad-nt]
 *                  [--size BYTES]
 *                  [--passes N] [--offset BYTES] [--thp | --no-thp] [--stepped]
 *   --kernel copy; --size: bytes per array (default 256M; K, M, G binary);
 *   --passes 10.
 *   Threads and places: OMP_NUM_THREADS, OMP_PLACES, OMP_PROC_BIND.
 *   --stepped: after the first touch print "ready huge=S", then run one
 *   pass for each line read on standard input and print its MB/s on a line
 *   of its own, until the input ends (a test interleaves passes so). Each
 *   such pass is preceded by an empty parallel region, untimed: the
 *   threads have slept while waiting for the line, and STREAM's passes,
 *   back to back, find them spinning at libgomp's barrier, not asleep.
 * Prints one line:
 *   refstream kernel=K size=B threads=T thp=H huge=S best_mbs=X median_mbs=M mbs=a,b,..
 * MB/s are 10^6 bytes a second; the first pass is not counted (STREAM's
 * rule), best and median are over the counted ones, listed in order. S is
 * the share of the two arrays that the kernel backed with transparent huge
 * pages (their AnonHugePages over their Size in /proc/self/smaps; -1 when
 * smaps cannot tell).
 */
#define _GNU_SOURCE
#ifdef __SSE2__
#include <immintrin.h>
#endif
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

/* huge_share: AnonHugePages over Size of the mappings that hold the n
 * arrays arr[0..n-1]. */
static double huge_share(double *const *arr, int n) {
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	char line[512];
	double size = 0, huge = 0, kb;
	int in = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			in = 0;
			for (int i = 0; i < n; i++)
				in |= (unsigned long)arr[i] >= lo && (unsigned long)arr[i] < hi;
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

enum kernel { COPY, TRIAD, LOAD, STORE, NTSTORE, COPYNT, TRIADNT, KERNELS };
static const char *const names[] = {"copy", "triad", "load", "store", "nt-store", "copy-nt", "triad-nt"};
static const int arrays_of[] = {2, 4, 1, 1, 1, 2, 4};

/* The streaming stores: VEC doubles a vector, stored with stream(). Only
 * on x86 (SSE2 or later); elsewhere the nt kernels are refused. */
#if !defined(__SSE2__)
#define NO_NT 1
#elif defined(__AVX__)
#define VEC 4
typedef __m256d vec;
#define vload(p) _mm256_loadu_pd(p)
#define vset1(x) _mm256_set1_pd(x)
#define vadd(x, y) _mm256_add_pd(x, y)
#define vmul(x, y) _mm256_mul_pd(x, y)
#define stream(p, v) _mm256_stream_pd(p, v)
#else
#define VEC 2
typedef __m128d vec;
#define vload(p) _mm_loadu_pd(p)
#define vset1(x) _mm_set1_pd(x)
#define vadd(x, y) _mm_add_pd(x, y)
#define vmul(x, y) _mm_mul_pd(x, y)
#define stream(p, v) _mm_stream_pd(p, v)
#endif
static volatile double sink; /* the load's sum, kept */

/* pass: one timed pass of kernel k by every thread, in MB/s; arr[0] is
 * the array written (copy, triad, store) or read (load). */
static double pass(enum kernel k, double *const *arr, long n) {
	double *restrict c = arr[0];
	const double *restrict a = arr[1], *restrict b = arr[2], *restrict d = arr[3];
	double s = 0;
	double t = omp_get_wtime();
	switch (k) {
	case COPY:
#pragma omp parallel for schedule(static)
		for (long j = 0; j < n; j++)
			c[j] = a[j];
		break;
	case TRIAD:
#pragma omp parallel for schedule(static)
		for (long j = 0; j < n; j++)
			c[j] = a[j] + b[j] * d[j];
		break;
	case LOAD:
#pragma omp parallel for simd schedule(static) reduction(+ : s)
		for (long j = 0; j < n; j++)
			s += c[j];
		break;
	case STORE:
#pragma omp parallel for schedule(static)
		for (long j = 0; j < n; j++)
			c[j] = 1.0;
		break;
#ifndef NO_NT
	/* n is a whole number of vectors and the arrays are page-aligned, so
	 * every vector's store is aligned whatever block a thread gets. */
	case NTSTORE:
#pragma omp parallel
		{
			vec one = vset1(1.0);
#pragma omp for schedule(static) nowait
			for (long v = 0; v < n / VEC; v++)
				stream(c + v * VEC, one);
			_mm_sfence();
		}
		break;
	case COPYNT:
#pragma omp parallel
		{
#pragma omp for schedule(static) nowait
			for (long v = 0; v < n / VEC; v++)
				stream(c + v * VEC, vload(a + v * VEC));
			_mm_sfence();
		}
		break;
	case TRIADNT:
#pragma omp parallel
		{
#pragma omp for schedule(static) nowait
			for (long v = 0; v < n / VEC; v++)
				stream(c + v * VEC, vadd(vload(a + v * VEC), vmul(vload(b + v * VEC), vload(d + v * VEC))));
			_mm_sfence();
		}
		break;
#endif
	default:
		break;
	}
	t = omp_get_wtime() - t;
	sink = s;
	return 8.0 * arrays_of[k] * n / t / 1e6;
}

int main(int argc, char **argv) {
	size_t size = 256u << 20;
	int passes = 10, thp = 1, stepped = 0;
	size_t offset = 4288;
	enum kernel k = COPY;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--stepped")) { stepped = 1; continue; }
		if (!strcmp(argv[i], "--thp")) { thp = 1; continue; }
		if (!strcmp(argv[i], "--no-thp")) { thp = 0; continue; }
		if (i + 1 >= argc) {
			fprintf(stderr, "refstream: %s needs a value\n", argv[i]);
			return 2;
		}
		if (!strcmp(argv[i], "--kernel")) {
			const char *name = argv[++i];
			int found = 0;
			for (int j = 0; j < KERNELS; j++)
				if (!strcmp(name, names[j])) {
					k = (enum kernel)j;
					found = 1;
				}
			if (!found) {
				fprintf(stderr, "refstream: unknown kernel %s (copy, triad, load, store, nt-store, copy-nt, triad-nt)\n", name);
				return 2;
			}
		} else if (!strcmp(argv[i], "--size")) size = parse_size(argv[++i]);
		else if (!strcmp(argv[i], "--passes")) passes = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--offset")) offset = parse_size(argv[++i]);
		else {
			fprintf(stderr, "refstream: unknown option %s\n", argv[i]);
			return 2;
		}
	}
#ifdef NO_NT
	if (k >= NTSTORE) {
		fprintf(stderr, "refstream: %s needs x86 streaming stores, which this build lacks\n", names[k]);
		return 2;
	}
#endif
	long n = (long)(size / sizeof(double)) / 16 * 16;
	if (offset % 64) {
		fprintf(stderr, "refstream: --offset %zu: want a multiple of 64 bytes (a cache line)\n", offset);
		return 2;
	}
	if (n < 1024 || passes < 2) {
		fprintf(stderr, "refstream: want --size of 8K or more and --passes of 2 or more\n");
		return 2;
	}
	double *arr[4] = {0};
	for (int i = 0; i < arrays_of[k]; i++)
		arr[i] = array(n * sizeof(double) + i * offset, thp) + i * offset / sizeof(double);
	int threads = 1;
#pragma omp parallel
	{
#pragma omp single
		threads = omp_get_num_threads();
	}
	/* First touch by the same static schedule, in one loop over all the
	 * arrays, as STREAM initialises them: the written array 0 (1 for the
	 * load, which reads it), a 1, b 2, d 3. */
	int na = arrays_of[k];
	double v0 = k == LOAD ? 1.0 : 0.0;
#pragma omp parallel for schedule(static)
	for (long j = 0; j < n; j++) {
		arr[0][j] = v0;
		for (int i = 1; i < na; i++)
			arr[i][j] = (double)i;
	}

	if (stepped) {
		printf("ready huge=%.3f\n", huge_share(arr, arrays_of[k]));
		fflush(stdout);
		char line[64];
		while (fgets(line, sizeof line, stdin)) {
#pragma omp parallel
			{
			}
			printf("%.1f\n", pass(k, arr, n));
			fflush(stdout);
		}
		return 0;
	}
	double *mbs = malloc(passes * sizeof(double));
	for (int p = 0; p < passes; p++)
		mbs[p] = pass(k, arr, n);
	/* The passes wrote what they should: a check the compiler cannot drop. */
	double want = k == COPY || k == COPYNT ? 1.0 : k == TRIAD || k == TRIADNT ? 1.0 + 2.0 * 3.0 : 1.0;
	for (long j = 0; j < n; j += 4099)
		if (arr[0][j] != want || (k == LOAD && sink != (double)n)) {
			fprintf(stderr, "refstream: %s: element %ld is %g, the sum %g\n", names[k], j, arr[0][j], sink);
			return 1;
		}
	int counted = passes - 1;
	double *sorted = malloc(counted * sizeof(double));
	memcpy(sorted, mbs + 1, counted * sizeof(double));
	qsort(sorted, counted, sizeof(double), cmp);
	double median = counted % 2 ? sorted[counted / 2] : (sorted[counted / 2 - 1] + sorted[counted / 2]) / 2;
	printf("refstream kernel=%s size=%zu threads=%d thp=%d huge=%.3f best_mbs=%.1f median_mbs=%.1f mbs=", names[k], n * sizeof(double),
	       threads, thp, huge_share(arr, arrays_of[k]), sorted[counted - 1], median);
	for (int p = 1; p < passes; p++)
		printf("%s%.1f", p > 1 ? "," : "", mbs[p]);
	printf("\n");
	return 0;
}
