/*
 * latethread: a process whose second thread starts late, for the check of
 * numascope top's drill-down CPU% of a thread that started between two
 * readings (internal/top, TestThreadCPUPercentOfALateThread). Written apart
 * from numascope: it never reads /proc.
 *
 * The main thread prints "ready" and waits for a line on stdin; then it
 * starts a thread that spins until its own CPU clock
 * (CLOCK_THREAD_CPUTIME_ID) reaches 200 ms, prints "done TID CPU_NS"
 * (flushed) and waits forever with the main thread.
 *
 * Usage: latethread
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static int64_t thread_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void *spin(void *arg)
{
	(void)arg;
	volatile uint64_t x = 1;
	while (thread_ns() < 200000000)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	printf("done %ld %lld\n", (long)syscall(SYS_gettid), (long long)thread_ns());
	fflush(stdout);
	for (;;)
		pause();
	return NULL;
}

int main(void)
{
	char line[16];
	pthread_t t;
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 1;
	if (pthread_create(&t, NULL, spin, NULL) != 0)
		return 1;
	for (;;)
		pause();
}
