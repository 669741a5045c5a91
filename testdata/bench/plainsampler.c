/*
 * plainsampler: a /proc/vmstat sampler as anyone would write it in C, for
 * scripts/bench-scale. It is written apart from numascope and from
 * baresampler.c on purpose: baresampler copies numascope's choices (when it
 * writes, how it formats, how it treats a late wake-up) to measure the same
 * work; this one takes none of them, so that a ratio against it does not
 * depend on how faithfully the project imitated itself.
 *
 * Per sample: clock_nanosleep to an absolute CLOCK_MONOTONIC deadline, one
 * pread of /proc/vmstat, a scan of its lines for the named counters, one
 * printf of a line "seconds value value ..." (each counter's change since the
 * previous sample) into stdio's buffer, which the C library writes out when
 * it is full (a file) or at each line (a terminal). A late wake-up simply
 * takes the next deadline after now. SIGUSR1 prints "# label: mN" and
 * flushes: scripts/bench-scale counts the sample lines between two marks.
 *
 * Build: gcc -O2 -static -o plainsampler plainsampler.c
 * Usage: plainsampler INTERVAL_NS COUNTER...   (e.g. 1000000 pgfault pgfree)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t marks, stop;
static void on_usr1(int s) { (void)s; marks++; }
static void on_term(int s) { (void)s; stop = 1; }

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: plainsampler INTERVAL_NS COUNTER...\n");
		return 2;
	}
	long long iv = atoll(argv[1]);
	int n = argc - 2;
	char **names = argv + 2;
	unsigned long long *prev = calloc(n, sizeof *prev), *cur = calloc(n, sizeof *cur);
	static char buf[1 << 16];
	int fd = open("/proc/vmstat", O_RDONLY);
	if (fd < 0 || !prev || !cur) {
		perror("plainsampler");
		return 1;
	}
	struct sigaction sa = {0};
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	struct timespec t0, next;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	next = t0;
	int seen = 0, first = 1;
	while (!stop) {
		next.tv_nsec += iv % 1000000000LL;
		next.tv_sec += iv / 1000000000LL + next.tv_nsec / 1000000000L;
		next.tv_nsec %= 1000000000L;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) && !stop)
			;
		if (stop)
			break;
		ssize_t len = pread(fd, buf, sizeof buf - 1, 0);
		if (len <= 0) {
			perror("plainsampler: pread /proc/vmstat");
			return 1;
		}
		buf[len] = 0;
		for (char *line = buf; line && *line;) {
			char *sp = strchr(line, ' ');
			if (!sp)
				break;
			for (int i = 0; i < n; i++)
				if ((size_t)(sp - line) == strlen(names[i]) && !memcmp(line, names[i], sp - line))
					cur[i] = strtoull(sp + 1, NULL, 10);
			line = strchr(sp, '\n');
			if (line)
				line++;
		}
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec || (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec + iv))
			next = now; /* late by more than an interval: start again from now */
		if (marks != seen) {
			seen = marks;
			printf("# label: m%d\n", seen);
			fflush(stdout);
		}
		if (!first) {
			printf("%.3f", (now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9);
			for (int i = 0; i < n; i++)
				printf(" %llu", cur[i] - prev[i]);
			putchar('\n');
		}
		first = 0;
		memcpy(prev, cur, n * sizeof *cur);
	}
	fflush(stdout);
	return 0;
}
