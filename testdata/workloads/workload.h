/*
 * workload.h: shared helpers of numascope's known-answer workloads.
 *
 * The workloads run inside the numavm test VM (scripts/numavm) and print their
 * own ground truth, so that tests can check numascope's numbers against
 * numbers measured another way:
 *   - where every page of a buffer lives (/proc/self/numa_maps, and
 *     move_pages with nodes == NULL),
 *   - how much the kernel's counters moved while they ran (/proc/vmstat and
 *     /sys/devices/system/node/nodeN/numastat, read before and after).
 * Each result is one line "@wl {JSON}" on stdout, and also in the file given
 * with --out FILE. Everything else they print is for people.
 *
 * Options every workload takes (wl_common):
 *   --out FILE    also write the result lines (JSON Lines) to FILE
 *   --lead S      wait S seconds before starting (default 0.5)
 *   --linger S    wait S seconds after the last result (default 0.5)
 * A sampler started together with the workload (numascope record -- CMD)
 * primes its counters as the workload starts and stops when it exits; the
 * lead and linger make sure its samples cover the whole run.
 *
 * No libnuma: the NUMA system calls are made with syscall(2), so that the
 * programs build with nothing but gcc -static -pthread.
 */
#ifndef NUMASCOPE_WORKLOAD_H
#define NUMASCOPE_WORKLOAD_H

#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_NODES 64
#define PAGE 4096L

/* Memory policies of <linux/mempolicy.h>. */
#define WL_MPOL_DEFAULT 0
#define WL_MPOL_PREFERRED 1
#define WL_MPOL_BIND 2
#define WL_MPOL_INTERLEAVE 3
#define WL_MPOL_F_NUMA_BALANCING (1 << 13)

static FILE *wl_out; /* --out FILE, or NULL */
static const char *wl_out_path;
static double wl_t0, wl_lead = 0.5, wl_linger = 0.5;

static inline double wl_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* wl_elapsed returns the seconds since wl_start. */
static inline double wl_elapsed(void) { return wl_now() - wl_t0; }

static inline void wl_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "workload: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

/* wl_emit prints one result line (a JSON object) to stdout and --out. */
static inline void wl_emit(const char *fmt, ...)
{
	char buf[16384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	printf("@wl %s\n", buf);
	fflush(stdout);
	if (wl_out) {
		fprintf(wl_out, "%s\n", buf);
		fflush(wl_out);
	}
}

static inline void wl_sleep(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* wl_common consumes the common option at argv[*i] (and its value); returns 0 if it is none. */
static inline int wl_common(int argc, char **argv, int *i)
{
	if (*i + 1 >= argc)
		return 0;
	if (!strcmp(argv[*i], "--out"))
		wl_out_path = argv[++*i];
	else if (!strcmp(argv[*i], "--lead"))
		wl_lead = atof(argv[++*i]);
	else if (!strcmp(argv[*i], "--linger"))
		wl_linger = atof(argv[++*i]);
	else
		return 0;
	return 1;
}

/* wl_start starts the clock, opens --out FILE and waits the lead time. */
static inline void wl_start(void)
{
	wl_t0 = wl_now();
	if (wl_out_path && !(wl_out = fopen(wl_out_path, "w")))
		wl_die("cannot write %s: %s", wl_out_path, strerror(errno));
	if (wl_lead > 0)
		wl_sleep(wl_lead);
}

/* wl_finish waits the linger time and closes --out FILE. */
static inline int wl_finish(void)
{
	if (wl_linger > 0)
		wl_sleep(wl_linger);
	if (wl_out && fclose(wl_out) != 0)
		wl_die("writing %s: %s", wl_out_path, strerror(errno));
	return 0;
}

/* ---- topology ------------------------------------------------------------ */

static inline int wl_read_file(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t k = fread(buf, 1, n - 1, f);
	buf[k] = 0;
	fclose(f);
	return 0;
}

/* wl_node_list fills ids with the node IDs of a node list file of sysfs
 * (online, has_cpu) and returns how many, or -1 if it cannot be read. */
static inline int wl_node_list(const char *name, int *ids)
{
	char path[128], buf[256];
	int n = 0;
	snprintf(path, sizeof path, "/sys/devices/system/node/%s", name);
	if (wl_read_file(path, buf, sizeof buf) < 0)
		return -1;
	for (char *p = buf; *p && *p != '\n';) {
		int a = strtol(p, &p, 10), b = a;
		if (*p == '-')
			b = strtol(p + 1, &p, 10);
		for (int i = a; i <= b && n < MAX_NODES; i++)
			ids[n++] = i;
		if (*p == ',')
			p++;
	}
	return n;
}

/* wl_nodes fills ids with the online node IDs and returns how many. */
static inline int wl_nodes(int *ids)
{
	int n = wl_node_list("online", ids);
	if (n < 0)
		wl_die("cannot read /sys/devices/system/node/online: is this a NUMA kernel?");
	return n;
}

/* wl_cpu_nodes fills ids with the IDs of the nodes that have CPUs (a worker
 * runs on each; CPU-less memory nodes are left out). */
static inline int wl_cpu_nodes(int *ids)
{
	int n = wl_node_list("has_cpu", ids);
	return n < 0 ? wl_nodes(ids) : n; /* has_cpu is missing only on very old kernels */
}

/* wl_node_cpus sets the CPUs of a node (its cpulist) in set; returns the count. */
static inline int wl_node_cpus(int node, cpu_set_t *set)
{
	char path[128], buf[4096];
	int n = 0;
	CPU_ZERO(set);
	snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", node);
	if (wl_read_file(path, buf, sizeof buf) < 0)
		return 0;
	for (char *p = buf; *p && *p != '\n';) {
		int a = strtol(p, &p, 10), b = a;
		if (*p == '-')
			b = strtol(p + 1, &p, 10);
		for (int i = a; i <= b; i++, n++)
			CPU_SET(i, set);
		if (*p == ',')
			p++;
	}
	return n;
}

/* wl_pin binds the calling thread to the CPUs of node. */
static inline void wl_pin(int node)
{
	cpu_set_t set;
	if (wl_node_cpus(node, &set) == 0)
		wl_die("node %d has no CPUs to run on", node);
	if (sched_setaffinity(0, sizeof set, &set) < 0)
		wl_die("sched_setaffinity to node %d: %s", node, strerror(errno));
}

/* ---- kernel counters ----------------------------------------------------- */

/* wl_vmstat returns the value of one /proc/vmstat counter (-1 if absent). */
static inline long long wl_vmstat(const char *name)
{
	static char buf[1 << 16];
	if (wl_read_file("/proc/vmstat", buf, sizeof buf) < 0)
		return -1;
	size_t len = strlen(name);
	for (char *p = buf; *p;) {
		if (!strncmp(p, name, len) && p[len] == ' ')
			return atoll(p + len + 1);
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
	return -1;
}

/* The numastat counters of one node, as in nodeN/numastat. */
struct wl_numastat {
	long long numa_hit, numa_miss, numa_foreign, interleave_hit, local_node, other_node;
};

static inline void wl_read_numastat(int node, struct wl_numastat *s)
{
	char path[128], buf[1024];
	memset(s, 0, sizeof *s);
	snprintf(path, sizeof path, "/sys/devices/system/node/node%d/numastat", node);
	if (wl_read_file(path, buf, sizeof buf) < 0)
		wl_die("cannot read %s", path);
	sscanf(buf, "numa_hit %lld numa_miss %lld numa_foreign %lld interleave_hit %lld local_node %lld other_node %lld",
	       &s->numa_hit, &s->numa_miss, &s->numa_foreign, &s->interleave_hit, &s->local_node, &s->other_node);
}

/* A snapshot of the counters the workloads report as deltas. */
struct wl_counters {
	int nnodes;
	int ids[MAX_NODES];
	struct wl_numastat node[MAX_NODES];
	long long hint_faults, hint_faults_local, pages_migrated, pte_updates;
	double t;
};

static inline void wl_snapshot(struct wl_counters *c)
{
	c->nnodes = wl_nodes(c->ids);
	for (int i = 0; i < c->nnodes; i++)
		wl_read_numastat(c->ids[i], &c->node[i]);
	c->hint_faults = wl_vmstat("numa_hint_faults");
	c->hint_faults_local = wl_vmstat("numa_hint_faults_local");
	c->pages_migrated = wl_vmstat("numa_pages_migrated");
	c->pte_updates = wl_vmstat("numa_pte_updates");
	c->t = wl_elapsed();
}

/* wl_emit_deltas reports how the counters moved from a to b, under a label. */
static inline void wl_emit_deltas(const char *label, const struct wl_counters *a, const struct wl_counters *b)
{
	char hit[2048] = "", il[2048] = "", miss[2048] = "", local[2048] = "";
	for (int i = 0; i < b->nnodes; i++) {
		const char *sep = i ? "," : "";
		snprintf(hit + strlen(hit), sizeof hit - strlen(hit), "%s%lld", sep, b->node[i].numa_hit - a->node[i].numa_hit);
		snprintf(il + strlen(il), sizeof il - strlen(il), "%s%lld", sep,
			 b->node[i].interleave_hit - a->node[i].interleave_hit);
		snprintf(miss + strlen(miss), sizeof miss - strlen(miss), "%s%lld", sep,
			 b->node[i].numa_miss - a->node[i].numa_miss);
		snprintf(local + strlen(local), sizeof local - strlen(local), "%s%lld", sep,
			 b->node[i].local_node - a->node[i].local_node);
	}
	wl_emit("{\"type\":\"counters\",\"label\":\"%s\",\"t0\":%.3f,\"t1\":%.3f,"
		"\"numa_hit\":[%s],\"interleave_hit\":[%s],\"numa_miss\":[%s],\"local_node\":[%s],"
		"\"numa_hint_faults\":%lld,\"numa_hint_faults_local\":%lld,\"numa_pages_migrated\":%lld,"
		"\"numa_pte_updates\":%lld}",
		label, a->t, b->t, hit, il, miss, local, b->hint_faults - a->hint_faults,
		b->hint_faults_local - a->hint_faults_local, b->pages_migrated - a->pages_migrated,
		b->pte_updates - a->pte_updates);
}

/* ---- placement ----------------------------------------------------------- */

/*
 * wl_numa_maps counts the pages of the mapping that starts at buf per node,
 * from /proc/self/numa_maps, into per_node[MAX_NODES]; returns -1 if no
 * mapping starts there. numa_maps walks the page tables, so it also counts
 * pages that NUMA balancing has made inaccessible (PROT_NONE) to catch the
 * next access, which move_pages does not report on some kernels.
 */
static inline int wl_numa_maps(void *buf, long *per_node)
{
	char line[4096];
	int found = -1;
	FILE *f = fopen("/proc/self/numa_maps", "r");
	memset(per_node, 0, MAX_NODES * sizeof *per_node);
	if (!f)
		wl_die("cannot read /proc/self/numa_maps: %s", strerror(errno));
	while (fgets(line, sizeof line, f)) {
		if (strtoul(line, NULL, 16) != (unsigned long)buf)
			continue;
		found = 0;
		for (char *p = strstr(line, " N"); p; p = strstr(p + 1, " N")) {
			int node;
			long pages;
			if (sscanf(p, " N%d=%ld", &node, &pages) == 2 && node >= 0 && node < MAX_NODES)
				per_node[node] += pages;
		}
		break;
	}
	fclose(f);
	return found;
}

/*
 * wl_move_pages counts the pages of [buf, buf+len) per node with move_pages
 * (nodes == NULL only queries) into per_node[MAX_NODES]; returns the pages it
 * could not report (not present, or made PROT_NONE by NUMA balancing).
 */
static inline long wl_move_pages(void *buf, long len, long *per_node)
{
	long npages = len / PAGE, bad = 0;
	enum { CHUNK = 4096 };
	void *pages[CHUNK];
	int status[CHUNK];
	memset(per_node, 0, MAX_NODES * sizeof *per_node);
	for (long off = 0; off < npages; off += CHUNK) {
		long n = npages - off < CHUNK ? npages - off : CHUNK;
		for (long i = 0; i < n; i++)
			pages[i] = (char *)buf + (off + i) * PAGE;
		if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0) < 0)
			wl_die("move_pages: %s", strerror(errno));
		for (long i = 0; i < n; i++) {
			if (status[i] >= 0 && status[i] < MAX_NODES)
				per_node[status[i]]++;
			else
				bad++;
		}
	}
	return bad;
}

static inline void wl_format_list(char *dst, size_t n, const long *v, int count)
{
	dst[0] = 0;
	for (int i = 0; i < count; i++)
		snprintf(dst + strlen(dst), n - strlen(dst), "%s%ld", i ? "," : "", v[i]);
}

/*
 * wl_emit_placement reports where a buffer's pages are: "per_node" from
 * numa_maps (every mapped page), "move_pages" and "unknown" from move_pages.
 */
static inline void wl_emit_placement(const char *label, int buffer, int owner_node, void *buf, long len, int nnodes)
{
	long maps[MAX_NODES], mp[MAX_NODES];
	char lmaps[2048], lmp[2048];
	if (wl_numa_maps(buf, maps) < 0)
		wl_die("no mapping starts at %p in /proc/self/numa_maps", buf);
	long bad = wl_move_pages(buf, len, mp);
	wl_format_list(lmaps, sizeof lmaps, maps, nnodes);
	wl_format_list(lmp, sizeof lmp, mp, nnodes);
	wl_emit("{\"type\":\"placement\",\"label\":\"%s\",\"t\":%.3f,\"buffer\":%d,\"owner_node\":%d,"
		"\"pages\":%ld,\"per_node\":[%s],\"move_pages\":[%s],\"unknown\":%ld}",
		label, wl_elapsed(), buffer, owner_node, len / PAGE, lmaps, lmp, bad);
}

/*
 * wl_alloc maps an anonymous buffer of small pages, not yet touched. PROT_NONE
 * guard pages on both sides keep the kernel from merging it with neighbouring
 * mappings (such as thread stacks), so that numa_maps has a line for it alone.
 */
static inline void *wl_alloc(long len)
{
	char *p = mmap(NULL, len + 2 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); /* @wl_alloc */
	if (p == MAP_FAILED)
		wl_die("mmap %ld bytes: %s", len, strerror(errno));
	p += PAGE;
	if (mprotect(p, len, PROT_READ | PROT_WRITE) < 0)
		wl_die("mprotect: %s", strerror(errno));
	/* Small pages keep the page counts exact whatever the THP mode. */
	madvise(p, len, MADV_NOHUGEPAGE);
	return p;
}

/* wl_touch writes every page of a buffer once (first touch). */
static inline void wl_touch(void *buf, long len)
{
	for (long off = 0; off < len; off += PAGE)
		((volatile char *)buf)[off] = 1;
}

#endif
