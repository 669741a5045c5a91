/*
 * knownwork: a run of known work for numascope experiment's fidelity test
 * (TestExperimentFiguresOfKnownWork), written apart from numascope.
 *
 * Usage: knownwork CALLS MILLISECONDS MORE_MILLISECONDS OUTFILE
 *
 * Makes exactly CALLS getppid system calls and CALLS / 2 getpgid calls
 * (through syscall(2), so that no library caches them), sleeps
 * MILLISECONDS + MORE_MILLISECONDS (one from each of two factors of the
 * experiment), and writes to OUTFILE one line: its CLOCK_REALTIME at the
 * start of main and just before it exits, in nanoseconds, and CALLS. The test holds the experiment's wall time to the
 * time between the two, its event totals to CALLS.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long long start = now_ns();
	if (argc != 5) {
		fprintf(stderr, "usage: knownwork CALLS MILLISECONDS MORE_MILLISECONDS OUTFILE\n");
		return 2;
	}
	long calls = atol(argv[1]);
	long ms = atol(argv[2]) + atol(argv[3]);
	for (long i = 0; i < calls; i++) {
		syscall(SYS_getppid);
		if (i % 2 == 1)
			syscall(SYS_getpgid, 0);
	}
	struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&d, &d) != 0 && errno == EINTR)
		;
	FILE *f = fopen(argv[4], "w");
	if (f == NULL) {
		perror(argv[4]);
		return 1;
	}
	long long end = now_ns();
	fprintf(f, "%lld %lld %ld\n", start, end, calls);
	return fclose(f) == 0 ? 0 : 1;
}
