/*
 * stream: the C baseline of numascope bench's bandwidth (docs/performance.md,
 * scripts/bench-numa). The same kernels as internal/bench (likwid-bench's):
 *   load   s += A[i]                 8 bytes per element
 *   copy   A[i] = B[i]              16 bytes
 *   triad  A[i] = B[i] + C[i]*D[i]  32 bytes
 *   store  A[i] = 1                  8 bytes
 *   nt-store, copy-nt, triad-nt: store, copy and triad with non-temporal
 *   stores (intrinsics: _mm512_stream_pd where the compiler targets
 *   AVX-512F, else _mm256_stream_pd, else _mm_stream_pd), and an sfence
 *   at the end of each pass, as numascope's
 * counted by STREAM's rules (only the bytes the kernel names), over the
 * same layout: SIZE bytes split between the kernel's arrays, each array
 * bound to one node and split into equal contiguous parts (multiples of 16
 * elements), one per thread, each thread pinned to one CPU and first
 * touching its own parts. A run lasts from the threads' common start (a
 * barrier) to the last one's end (another); one uncounted run, then REPEAT
 * counted ones; prints the best and every run in MB/s (10^6 bytes).
 *
 * Build: gcc -O3 -march=native -fopenmp-simd -ffp-contract=off -static -pthread -o stream stream.c
 *   (-fopenmp-simd lets gcc vectorise load's sum without -ffast-math;
 *   -ffp-contract=off keeps triad's product and sum apart, as numascope's.)
 * Usage: stream KERNEL [--size BYTES] [--cpus 0,1,...] [--node N] [--repeat R]
 * Prints: stream kernel=K threads=T bytes=B best_mbs=X mbs=a,b,... sum=S nt_bits=V
 *   (V: the width of the streaming stores, 512, 256 or 128)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <immintrin.h>

#define HUGE (2UL << 20)
#define MPOL_BIND 2
#define MPOL_MF_STRICT 1
#define MAXT 1024

enum { LOAD, COPY, TRIAD, STORE, NTSTORE, COPYNT, TRIADNT };
static const char *names[] = {"load", "copy", "triad", "store", "nt-store", "copy-nt", "triad-nt"};
static const int narrays[] = {1, 2, 4, 1, 1, 2, 4};

/* The widest streaming store the compiler targets: W doubles at a time. */
#if defined(__AVX512F__)
#define W 8
#define VEC __m512d
#define LD _mm512_loadu_pd
#define ST _mm512_stream_pd
#define SET1 _mm512_set1_pd
#define ADD _mm512_add_pd
#define MUL _mm512_mul_pd
#elif defined(__AVX__)
#define W 4
#define VEC __m256d
#define LD _mm256_loadu_pd
#define ST _mm256_stream_pd
#define SET1 _mm256_set1_pd
#define ADD _mm256_add_pd
#define MUL _mm256_mul_pd
#else
#define W 2
#define VEC __m128d
#define LD _mm_loadu_pd
#define ST _mm_stream_pd
#define SET1 _mm_set1_pd
#define ADD _mm_add_pd
#define MUL _mm_mul_pd
#endif
static int kernel, nthreads, repeat = 5;
static int cpus[MAXT];
static double *arr[4];
static size_t chunk;
static double sums[MAXT * 8];
static double *times;
static pthread_barrier_t bar;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double run(double *restrict a, double *restrict b, double *restrict c, double *restrict d, size_t n)
{
	double s = 0;
	switch (kernel) {
	case LOAD:
#pragma omp simd reduction(+ : s)
		for (size_t i = 0; i < n; i++)
			s += a[i];
		break;
	case COPY:
		for (size_t i = 0; i < n; i++)
			a[i] = b[i];
		break;
	case TRIAD:
		for (size_t i = 0; i < n; i++)
			a[i] = b[i] + c[i] * d[i];
		break;
	case STORE:
		for (size_t i = 0; i < n; i++)
			a[i] = 1;
		break;
	/* n is a multiple of 16 and a 64-byte aligned: the streaming stores need no tail. */
	case NTSTORE: {
		VEC v = SET1(1);
		for (size_t i = 0; i < n; i += W)
			ST(a + i, v);
		_mm_sfence();
		break;
	}
	case COPYNT:
		for (size_t i = 0; i < n; i += W)
			ST(a + i, LD(b + i));
		_mm_sfence();
		break;
	case TRIADNT:
		for (size_t i = 0; i < n; i += W)
			ST(a + i, ADD(LD(b + i), MUL(LD(c + i), LD(d + i))));
		_mm_sfence();
		break;
	}
	return s;
}

static void *worker(void *arg)
{
	int w = (int)(intptr_t)arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpus[w], &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof set, &set)) {
		fprintf(stderr, "stream: cannot pin to CPU %d\n", cpus[w]);
		exit(1);
	}
	int na = narrays[kernel];
	double *p[4] = {0};
	for (int a = 0; a < na; a++) {
		p[a] = arr[a] + (size_t)w * chunk;
		double v = kernel == LOAD ? 1 : a;
		for (size_t i = 0; i < chunk; i++)
			p[a][i] = v;
	}
	for (int r = 0; r <= repeat; r++) {
		double t0 = 0;
		pthread_barrier_wait(&bar);
		if (w == 0)
			t0 = now();
		sums[w * 8] += run(p[0], p[1], p[2], p[3], chunk);
		pthread_barrier_wait(&bar);
		if (w == 0)
			times[r] = now() - t0;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	size_t size = 256UL << 20;
	int node = -1;
	if (argc < 2) {
		fprintf(stderr, "usage: stream load|copy|triad|store|nt-store|copy-nt|triad-nt [--size BYTES] [--cpus LIST] [--node N] [--repeat R]\n");
		return 2;
	}
	kernel = -1;
	for (int k = 0; k < (int)(sizeof names / sizeof *names); k++)
		if (!strcmp(argv[1], names[k]))
			kernel = k;
	if (kernel < 0) { fprintf(stderr, "stream: unknown kernel %s\n", argv[1]); return 2; }
	for (int i = 2; i + 1 < argc; i += 2) {
		const char *a = argv[i], *v = argv[i + 1];
		if (!strcmp(a, "--size")) {
			char *end;
			size = strtoull(v, &end, 10);
			if (*end == 'K' || *end == 'k') size <<= 10;
			if (*end == 'M' || *end == 'm') size <<= 20;
			if (*end == 'G' || *end == 'g') size <<= 30;
		} else if (!strcmp(a, "--cpus")) {
			char *s = strdup(v), *tok;
			for (tok = strtok(s, ","); tok && nthreads < MAXT; tok = strtok(NULL, ","))
				cpus[nthreads++] = atoi(tok);
		} else if (!strcmp(a, "--node")) node = atoi(v);
		else if (!strcmp(a, "--repeat")) repeat = atoi(v);
		else { fprintf(stderr, "stream: unknown option %s\n", a); return 2; }
	}
	if (nthreads == 0) {
		cpu_set_t set;
		sched_getaffinity(0, sizeof set, &set);
		for (int c = 0; c < CPU_SETSIZE && nthreads < MAXT; c++)
			if (CPU_ISSET(c, &set))
				cpus[nthreads++] = c;
	}
	int na = narrays[kernel];
	size_t per = size / na / 4096 * 4096;
	chunk = (per / 8 / nthreads) & ~(size_t)15;
	for (int a = 0; a < na; a++) {
		char *m = mmap(NULL, per + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED) { perror("stream: mmap"); return 1; }
		arr[a] = (double *)(((uintptr_t)m + HUGE - 1) & ~(HUGE - 1));
		madvise(arr[a], per, MADV_HUGEPAGE);
		if (node >= 0) {
			unsigned long mask[16] = {0};
			mask[node / 64] = 1UL << (node % 64);
			if (syscall(SYS_mbind, arr[a], per, MPOL_BIND, mask, 16 * 64 + 1, MPOL_MF_STRICT)) { perror("stream: mbind"); return 1; }
		}
	}
	times = calloc(repeat + 1, sizeof *times);
	pthread_barrier_init(&bar, NULL, nthreads);
	pthread_t th[MAXT];
	for (int w = 0; w < nthreads; w++)
		pthread_create(&th[w], NULL, worker, (void *)(intptr_t)w);
	for (int w = 0; w < nthreads; w++)
		pthread_join(th[w], NULL);
	double bytes = (double)chunk * nthreads * na * 8, best = 0;
	printf("stream kernel=%s threads=%d bytes=%.0f ", argv[1], nthreads, bytes);
	for (int r = 1; r <= repeat; r++)
		if (bytes / times[r] / 1e6 > best)
			best = bytes / times[r] / 1e6;
	printf("best_mbs=%.1f mbs=", best);
	for (int r = 1; r <= repeat; r++)
		printf("%s%.1f", r > 1 ? "," : "", bytes / times[r] / 1e6);
	printf(" sum=%g nt_bits=%d\n", sums[0], W * 64);
	return 0;
}
