/*
 * burn: a process that spends a given CPU time and then waits, for the
 * fidelity check of numascope top's per-cgroup CPU% against the cgroup's
 * own cpu.stat (internal/vmtest, TestTopCgroupCPUVM). Written apart from
 * numascope: it never reads /proc.
 *
 * It spins until its own CPU clock (CLOCK_PROCESS_CPUTIME_ID) has grown by
 * MS milliseconds, prints "done PID CPU_NS" (flushed), then sleeps until
 * killed, so that it stays in its cgroup and in /proc while it spends
 * nothing more; with "exit", it exits instead (a short job, whose last
 * ticks no /proc reader sees).
 *
 * Usage: burn MS [exit]
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3 || atol(argv[1]) <= 0 || (argc == 3 && strcmp(argv[2], "exit"))) {
		fprintf(stderr, "usage: burn MS [exit]\n");
		return 2;
	}
	int64_t until = cpu_ns() + (int64_t)atol(argv[1]) * 1000000;
	volatile uint64_t x = 1;
	while (cpu_ns() < until)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	printf("done %d %lld\n", (int)getpid(), (long long)cpu_ns());
	fflush(stdout);
	if (argc == 3)
		return 0;
	for (;;)
		pause();
}
