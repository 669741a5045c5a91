/*
 * pagecost: what one more page of code costs a program that wakes up now
 * and then, for scripts/bench-pages (docs/performance.md, "Where a sample's
 * time goes at 1 s: pages").
 *
 * A sampler asleep between samples comes back to cold caches and a cold TLB;
 * what it then pays grows with how much code and data it touches, and on a
 * machine with nested paging (a VM) a TLB miss is a two-dimensional page
 * walk. pagecost tells the two apart: per wake-up it calls CODE of its 256
 * small functions, each ALIGN bytes apart, and reads one cache line from
 * each of DATA pages of a static array. Built with -DALIGN=4096 each function
 * is on a page of its own (CODE pages, CODE lines); with -DALIGN=64 the same
 * CODE functions share a few pages (CODE lines, CODE/64 pages). The
 * difference between the two is what the pages cost beyond the lines.
 *
 * Per wake-up: clock_nanosleep to an absolute CLOCK_MONOTONIC deadline, the
 * calls and reads, nothing else. At the end it prints one line:
 *   align=A code=C data=D interval_ms=I wakes=N cpu_ns_per_wake=X
 * where X is the process's CPU (CLOCK_PROCESS_CPUTIME_ID) over the wake-ups
 * after the first three, divided by their number.
 *
 * Build: gcc -O2 -static -DALIGN=4096 -o pagecost-page pagecost.c
 *        gcc -O2 -static -DALIGN=64 -o pagecost-line pagecost.c
 * Usage: pagecost CODE DATA INTERVAL_MS WAKES
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef ALIGN
#define ALIGN 4096
#endif

/* 256 functions f0000..f3333 (four base-4 digits), each ALIGN-aligned and
 * each its own code (0##n is n as an octal constant). */
#define F(n) __attribute__((noinline, aligned(ALIGN))) static int f##n(int x) { return x * 3 + 0##n; }
#define F4(a) F(a##0) F(a##1) F(a##2) F(a##3)
#define F16(a) F4(a##0) F4(a##1) F4(a##2) F4(a##3)
#define F64(a) F16(a##0) F16(a##1) F16(a##2) F16(a##3)
F64(0) F64(1) F64(2) F64(3)
#define P(n) f##n,
#define P4(a) P(a##0) P(a##1) P(a##2) P(a##3)
#define P16(a) P4(a##0) P4(a##1) P4(a##2) P4(a##3)
#define P64(a) P16(a##0) P16(a##1) P16(a##2) P16(a##3)
static int (*const fns[256])(int) = {P64(0) P64(1) P64(2) P64(3)};

static char data[256][4096];

static double cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: pagecost CODE DATA INTERVAL_MS WAKES (CODE, DATA at most 256)\n");
		return 2;
	}
	int code = atoi(argv[1]), pages = atoi(argv[2]);
	long iv = atol(argv[3]) * 1000000L, wakes = atol(argv[4]);
	if (code < 0 || code > 256 || pages < 0 || pages > 256 || iv <= 0 || wakes <= 0) {
		fprintf(stderr, "pagecost: CODE and DATA from 0 to 256, INTERVAL_MS and WAKES positive\n");
		return 2;
	}
	for (int i = 0; i < 256; i++)
		data[i][0] = (char)i; /* every page present before the first wake-up */
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	volatile int acc = 0;
	double c0 = 0;
	for (long w = 0; w < wakes + 3; w++) {
		if (w == 3)
			c0 = cpu_ns();
		t.tv_nsec += iv;
		while (t.tv_nsec >= 1000000000L) {
			t.tv_nsec -= 1000000000L;
			t.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
		for (int i = 0; i < code; i++)
			acc += fns[i]((int)w);
		for (int i = 0; i < pages; i++)
			acc += data[i][(w * 64) % 4096];
	}
	printf("align=%d code=%d data=%d interval_ms=%ld wakes=%ld cpu_ns_per_wake=%.0f\n",
	       ALIGN, code, pages, iv / 1000000, wakes, (cpu_ns() - c0) / wakes);
	return acc == 42; /* acc is used: the calls are not optimised away */
}
