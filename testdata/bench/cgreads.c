/* cgreads: the floor of numascope exporter --cgroups. Walks a cgroup tree
 * from ROOT with openat and getdents, as the exporter does, and in every
 * cgroup below the root reads memory.numa_stat, memory.stat,
 * cpuset.cpus.effective and cpuset.mems.effective (open, read, close),
 * parsing nothing; N passes, one every INTERVAL_MS milliseconds when
 * given (as the exporter is scraped: the caches as cold as its). Prints
 * the CPU microseconds per pass (getrusage, user + system), the bytes
 * and the files read per pass.
 *
 * With CPUSET_ROOT, cgroup v1: ROOT is the memory hierarchy and CPUSET_ROOT
 * the cpuset one, walked alongside (the cgroup of the same path, opened
 * with openat from its parent there); in every cgroup it reads the memory
 * cgroup's memory.numa_stat, memory.stat and cgroup.procs and the cpuset
 * cgroup's cgroup.procs, cpuset.effective_cpus and cpuset.effective_mems:
 * what the exporter needs to tell whether the two hold the same processes
 * and to export the cpuset.
 *
 * Usage: cgreads N ROOT [INTERVAL_MS [CPUSET_ROOT]] */
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

static const char *files[] = {"memory.numa_stat", "memory.stat", "cpuset.cpus.effective", "cpuset.mems.effective", NULL};
static const char *v1files[] = {"memory.numa_stat", "memory.stat", "cgroup.procs", NULL};
static const char *v1cpuset[] = {"cgroup.procs", "cpuset.effective_cpus", "cpuset.effective_mems", NULL};
static char buf[65536];
static long bytes, nfiles;
static int v1;

static void readall(int dirfd, const char **names) {
	for (; dirfd >= 0 && *names; names++) {
		int fd = openat(dirfd, *names, O_RDONLY | O_CLOEXEC);
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

struct linux_dirent64 {
	unsigned long long d_ino;
	long long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* walk reads the cgroup open at dirfd and those below it; csfd is the
 * cgroup of the same path in the v1 cpuset hierarchy (-1: none). */
static void walk(int dirfd, int csfd, int depth) {
	if (depth > 0) {
		readall(dirfd, v1 ? v1files : files);
		if (v1)
			readall(csfd, v1cpuset);
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
			int cs = csfd >= 0 ? openat(csfd, d->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW) : -1;
			walk(fd, cs, depth + 1);
			close(fd);
			if (cs >= 0)
				close(cs);
		}
	}
}

static double cpu_us(void) {
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

int main(int argc, char **argv) {
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: cgreads N ROOT [INTERVAL_MS [CPUSET_ROOT]]\n");
		return 2;
	}
	int n = atoi(argv[1]);
	long ms = argc >= 4 ? atol(argv[3]) : 0;
	v1 = argc == 5;
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
		int cs = -1;
		if (v1 && (cs = open(argv[4], O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
			perror(argv[4]);
			return 1;
		}
		walk(fd, cs, 0);
		close(fd);
		if (cs >= 0)
			close(cs);
	}
	printf("%.1f %ld %ld\n", (cpu_us() - t0) / n, bytes, nfiles);
	return 0;
}
