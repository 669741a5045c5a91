/*
 * baretop: the floor of one numascope top refresh, for scripts/bench-top.
 *
 *   baretop ROUNDS INTERVAL_MS DETAILED MAPS_EVERY
 *
 * Each round does the least `numascope top -b --format json` does, with
 * nothing parsed beyond the fields used and nothing sorted or formatted:
 *   - lists /proc and reads every process's stat (utime, stime), each
 *     file held open from one round to the next and read again with pread
 *     (as numascope top does), closed when the process is gone;
 *   - for the DETAILED processes with the most CPU time in the round, reads
 *     sched, every thread's stat and, every MAPS_EVERY rounds, numa_maps;
 *   - reads each node's meminfo, numastat and vmstat, /proc/stat and
 *     /proc/vmstat;
 *   - writes one line to stdout;
 * then sleeps INTERVAL_MS. Build: gcc -O2 -static -o baretop baretop.c
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXP 65536

static char buf[1 << 20];
static int pids[MAXP];
static unsigned long long delta[MAXP];
static unsigned long long prev[1 << 22]; /* by PID (pid_max is at most 2^22) */
static int held[1 << 22];                /* by PID: the stat file's fd + 1, 0 when none */
static unsigned seen[1 << 22];           /* by PID: the last round + 1 that listed it */
static char listed[1 << 22];             /* by PID: in heldpids */
static int heldpids[MAXP], nheld;

/* readstat reads pid's stat into buf through its held file, opening it
 * when there is none or when the held one's process is gone (ESRCH). */
static long readstat(int pid)
{
	char path[64];
	for (int tries = 0; tries < 2; tries++) {
		if (!held[pid]) {
			snprintf(path, sizeof path, "/proc/%d/stat", pid);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				return -1;
			held[pid] = fd + 1;
			if (!listed[pid] && nheld < MAXP) {
				listed[pid] = 1;
				heldpids[nheld++] = pid;
			}
		}
		long n = pread(held[pid] - 1, buf, sizeof buf - 1, 0);
		if (n > 0) {
			buf[n] = 0;
			return n;
		}
		close(held[pid] - 1);
		held[pid] = 0;
	}
	return -1;
}

static long slurp(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	long n = 0, m;
	while ((m = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
		n += m;
	close(fd);
	buf[n] = 0;
	return n;
}

static unsigned long long stat_ticks(void)
{
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	unsigned long long ut = 0, st = 0;
	/* fields 3.. after ") ": utime is field 14, stime 15 */
	int f = 2;
	for (; *p && f < 15; p++) {
		if (*p == ' ') {
			f++;
			if (f == 14)
				ut = strtoull(p + 1, NULL, 10);
			if (f == 15)
				st = strtoull(p + 1, NULL, 10);
		}
	}
	return ut + st;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: baretop ROUNDS INTERVAL_MS DETAILED MAPS_EVERY\n");
		return 2;
	}
	int rounds = atoi(argv[1]), interval = atoi(argv[2]), detailed = atoi(argv[3]), every = atoi(argv[4]);
	char path[512];
	long total = 0;
	for (int r = 0; r < rounds; r++) {
		DIR *d = opendir("/proc");
		struct dirent *e;
		int n = 0;
		while (d && (e = readdir(d)) && n < MAXP) {
			if (e->d_name[0] < '1' || e->d_name[0] > '9')
				continue;
			int pid = atoi(e->d_name) & ((1 << 22) - 1);
			seen[pid] = r + 1;
			if (readstat(pid) <= 0)
				continue;
			unsigned long long t = stat_ticks();
			pids[n] = pid;
			delta[n] = t - prev[pid & ((1 << 22) - 1)];
			prev[pid & ((1 << 22) - 1)] = t;
			n++;
		}
		if (d)
			closedir(d);
		/* close the files of the processes gone */
		for (int i = 0; i < nheld;) {
			int pid = heldpids[i];
			if (held[pid] && seen[pid] == (unsigned)r + 1) {
				i++;
				continue;
			}
			if (held[pid])
				close(held[pid] - 1);
			held[pid] = 0;
			listed[pid] = 0;
			heldpids[i] = heldpids[--nheld];
		}
		/* the DETAILED busiest: a partial selection, as top's sort does */
		for (int k = 0; k < detailed && k < n; k++) {
			int best = k;
			for (int i = k + 1; i < n; i++)
				if (delta[i] > delta[best])
					best = i;
			int pid = pids[best];
			unsigned long long dl = delta[best];
			pids[best] = pids[k], pids[k] = pid;
			delta[best] = delta[k], delta[k] = dl;
			snprintf(path, sizeof path, "/proc/%d/sched", pid);
			total += slurp(path);
			snprintf(path, sizeof path, "/proc/%d/task", pid);
			DIR *t = opendir(path);
			struct dirent *te;
			while (t && (te = readdir(t))) {
				if (te->d_name[0] < '1' || te->d_name[0] > '9')
					continue;
				snprintf(path, sizeof path, "/proc/%d/task/%s/stat", pid, te->d_name);
				total += slurp(path);
			}
			if (t)
				closedir(t);
			if (r % every == 0) {
				snprintf(path, sizeof path, "/proc/%d/numa_maps", pid);
				total += slurp(path);
			}
		}
		for (int node = 0;; node++) {
			snprintf(path, sizeof path, "/sys/devices/system/node/node%d/meminfo", node);
			long m = slurp(path);
			if (m < 0)
				break;
			snprintf(path, sizeof path, "/sys/devices/system/node/node%d/numastat", node);
			total += m + slurp(path);
			snprintf(path, sizeof path, "/sys/devices/system/node/node%d/vmstat", node);
			total += slurp(path);
		}
		total += slurp("/proc/stat") + slurp("/proc/vmstat");
		printf("{\"round\":%d,\"processes\":%d,\"bytes\":%ld}\n", r, n, total);
		fflush(stdout);
		if (r + 1 < rounds) {
			struct timespec ts = {interval / 1000, (interval % 1000) * 1000000L};
			nanosleep(&ts, NULL);
		}
	}
	return 0;
}
