/* cgreads: the floor of numascope exporter --cgroups. Walks a cgroup tree
 * from ROOT with openat and getdents, as the exporter does, and in every
 * cgroup below the root reads memory.numa_stat, memory.stat,
 * cpuset.cpus.effective and cpuset.mems.effective (open, read, close),
 * parsing nothing; N passes, one every INTERVAL_MS milliseconds when
 * given (as the exporter is scraped: the caches as cold as its). Prints
 * the CPU microseconds per pass (getrusage, user + system), the bytes
 * and the files read per pass.
 *
 * Usage: cgreads N ROOT [INTERVAL_MS] */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char *files[] = {"memory.numa_stat", "memory.stat", "cpuset.cpus.effective", "cpuset.mems.effective"};
static char buf[65536];
static long bytes, nfiles;

struct linux_dirent64 {
	unsigned long long d_ino;
	long long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static void walk(int dirfd, int depth) {
	if (depth > 0) {
		for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
			int fd = openat(dirfd, files[i], O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			nfiles++;
			ssize_t n;
			/* a short read is the end: cgroupfs prints these whole, as the exporter assumes */
			while ((n = read(fd, buf, sizeof buf)) > 0) {
				bytes += n;
				if (n < (ssize_t)sizeof buf)
					break;
			}
			close(fd);
		}
	}
	char dents[32768];
	long n;
	while ((n = syscall(SYS_getdents64, dirfd, dents, sizeof dents)) > 0) {
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(dents + off);
			off += d->d_reclen;
			if (d->d_type != DT_DIR || !strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
				continue;
			int fd = openat(dirfd, d->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
			if (fd < 0)
				continue;
			walk(fd, depth + 1);
			close(fd);
		}
	}
}

static double cpu_us(void) {
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

int main(int argc, char **argv) {
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: cgreads N ROOT [INTERVAL_MS]\n");
		return 2;
	}
	int n = atoi(argv[1]);
	long ms = argc == 4 ? atol(argv[3]) : 0;
	double t0 = cpu_us();
	for (int i = 0; i < n; i++) {
		if (i > 0 && ms > 0) {
			struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
			nanosleep(&ts, NULL);
		}
		bytes = nfiles = 0;
		int fd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			perror(argv[2]);
			return 1;
		}
		walk(fd, 0);
		close(fd);
	}
	printf("%.1f %ld %ld\n", (cpu_us() - t0) / n, bytes, nfiles);
	return 0;
}
