/*
 * cpuclock: a process that tells its own CPU time, for the fidelity check of
 * numascope top's CPU% (internal/top, TestCPUPercentMatchesTheProcessClock).
 * Written apart from numascope: it never reads /proc.
 *
 * It runs a duty cycle until killed: 4 ms of CPU in user space (arithmetic),
 * 4 ms of CPU in the kernel (getppid in a loop), then 8 ms asleep, so about
 * half a CPU, half of it system time. At each change of phase it prints one
 * line, flushed:
 *
 *   REALTIME_NS CPUTIME_NS
 *
 * CLOCK_REALTIME (what Go's time.Now reads) and CLOCK_PROCESS_CPUTIME_ID:
 * the scheduler's own account of the process's CPU time, to the nanosecond.
 * The CPU clock only grows, so between two lines it lies between theirs.
 *
 * Usage: cpuclock
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static int64_t ns(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void mark(void)
{
	int64_t r = ns(CLOCK_REALTIME), c = ns(CLOCK_PROCESS_CPUTIME_ID);
	printf("%lld %lld\n", (long long)r, (long long)c);
	fflush(stdout);
}

int main(void)
{
	const int64_t phase = 4000000; /* 4 ms of CPU */
	const struct timespec nap = {0, 8000000};
	volatile uint64_t x = 1;
	for (;;) {
		mark();
		int64_t until = ns(CLOCK_PROCESS_CPUTIME_ID) + phase;
		while (ns(CLOCK_PROCESS_CPUTIME_ID) < until)
			for (int i = 0; i < 100000; i++)
				x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		mark();
		until = ns(CLOCK_PROCESS_CPUTIME_ID) + phase;
		while (ns(CLOCK_PROCESS_CPUTIME_ID) < until)
			for (int i = 0; i < 100; i++)
				syscall(SYS_getppid);
		mark();
		nanosleep(&nap, NULL);
	}
}
