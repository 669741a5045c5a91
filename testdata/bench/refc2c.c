/*
 * refc2c: an independent reference for numascope bench --kind c2c, written
 * without numascope's code. Two threads, each pinned to its own CPU, take
 * turns on one int: the first waits until it holds an even value v and
 * writes v+1, the second waits for an odd one and writes v+1, each with
 * __atomic_compare_exchange in a loop. The first thread times, with
 * clock_gettime(CLOCK_MONOTONIC), a window of --trips round trips after
 * --warm uncounted ones, --repeat times; half a round trip is printed:
 *
 *   refc2c --a CPU --b CPU [--trips N] [--repeat R] [--warm W]
 *   -> min_ns=.. median_ns=.. max_ns=.. trips=N repeat=R
 *
 * The int is alone on its 128-byte-aligned block, on memory the first
 * thread touches first (its node's, by the kernel's first-touch policy).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct {
	_Alignas(128) int v;
	char pad[124];
} *shared;

static long trips = 1000, warm = 32, repeat = 15;
static int cpu_a = 0, cpu_b = 1;

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0) {
		fprintf(stderr, "refc2c: cannot pin to CPU %d\n", cpu);
		exit(1);
	}
}

/* play takes n turns starting from the value it waits for, *want. */
static void play(int *want, long n)
{
	for (long i = 0; i < n; i++) {
		int expected;
		do {
			expected = *want;
		} while (!__atomic_compare_exchange_n(&shared->v, &expected, *want + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
		*want += 2;
	}
}

static void *second(void *arg)
{
	(void)arg;
	pin(cpu_b);
	int want = 1;
	/* Every window is warm + trips turns, and the windows follow each other. */
	play(&want, (warm + trips) * (repeat + 1));
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		long v = strtol(argv[i + 1], NULL, 10);
		if (!strcmp(argv[i], "--a")) cpu_a = (int)v;
		else if (!strcmp(argv[i], "--b")) cpu_b = (int)v;
		else if (!strcmp(argv[i], "--trips")) trips = v;
		else if (!strcmp(argv[i], "--repeat")) repeat = v;
		else if (!strcmp(argv[i], "--warm")) warm = v;
		else { fprintf(stderr, "refc2c: unknown option %s\n", argv[i]); return 2; }
	}
	if (trips < 1 || repeat < 1 || warm < 0) {
		fprintf(stderr, "refc2c: --trips and --repeat must be positive\n");
		return 2;
	}
	pin(cpu_a);
	if (posix_memalign((void **)&shared, 4096, 4096) != 0) return 1;
	memset(shared, 0, 4096);
	double *half = malloc(sizeof(double) * repeat);
	pthread_t t;
	if (pthread_create(&t, NULL, second, NULL) != 0) return 1;
	int want = 0;
	/* One uncounted window first, as numascope's calibration. */
	play(&want, warm + trips);
	for (long r = 0; r < repeat; r++) {
		struct timespec t0, t1;
		play(&want, warm);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		play(&want, trips);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
		half[r] = ns / trips / 2;
	}
	pthread_join(t, NULL);
	qsort(half, repeat, sizeof(double), cmp);
	double med = repeat % 2 ? half[repeat / 2] : (half[repeat / 2 - 1] + half[repeat / 2]) / 2;
	printf("min_ns=%.3f median_ns=%.3f max_ns=%.3f trips=%ld repeat=%ld\n", half[0], med, half[repeat - 1], trips, repeat);
	return 0;
}
