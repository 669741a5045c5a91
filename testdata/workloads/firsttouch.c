/*
 * firsttouch: the classic NUMA initialisation bug and its fix, with known answers.
 *
 *   firsttouch --serial|--parallel [--mb N] [--seconds S] [--settle S]
 *              [--go FILE] [--until FILE] [--until-local] [--out FILE] [--lead S] [--linger S]
 *
 * One worker thread per node with CPUs, pinned to that node's CPUs, owns a buffer
 * of N MiB (default 32) of small pages (the whole process has only small pages:
 * every hinting fault is one page).
 *   --serial    the main thread, pinned to the first node, first-touches every
 *               buffer: all pages land on that node, and the workers on the
 *               other nodes then compute on remote memory. With automatic NUMA
 *               balancing on, hinting faults follow and pages migrate to the
 *               workers' nodes.
 *   --parallel  each worker first-touches its own buffer: pages spread evenly,
 *               one buffer per node, and stay local.
 * Then the workers wait --settle seconds (default 1) and compute on their own
 * buffers for --seconds (default 8): they read every cache line and write one
 * word per page, over and over.
 *   --go FILE     after the settle time, the workers start computing only once
 *                 FILE exists: a test looks at the placement after the first
 *                 touch first, however long that look takes on a busy machine
 *   --until FILE  they compute (for at least --seconds) until FILE exists: a
 *                 test looks at the threads while they provably compute
 *   --until-local they compute (for at least --seconds) until every buffer's
 *                 pages are all on its worker's node (numa_maps): with NUMA
 *                 balancing on, a serial first touch's remote pages have then
 *                 all been migrated, each after a remote hinting fault,
 *                 however slowly a busy machine runs the scanner and the
 *                 workers. (Not with an interleave policy: its pages stay.)
 *
 * Ground truth printed (see workload.h): placement of every buffer after the
 * first touch ("after_init") and after computing ("after_compute"), counter
 * deltas for the phases "init", "compute" and "total", and a "summary".
 */
#include "workload.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/prctl.h>

struct worker {
	pthread_t th;
	int index, node;
	char *buf;
	long passes;
};

static struct worker workers[MAX_NODES];
static int nworkers, parallel = -1;
static long len;
static double compute_seconds = 8, settle_seconds = 1;
static const char *go_file, *until_file;
static int until_local;
static pthread_barrier_t touched, go;
static atomic_int stop;

/* all_local says whether every worker's buffer lies wholly on its node. */
static int all_local(void)
{
	long per_node[MAX_NODES];
	for (int i = 0; i < nworkers; i++) {
		if (wl_numa_maps(workers[i].buf, per_node) < 0)
			wl_die("no mapping starts at %p in /proc/self/numa_maps", (void *)workers[i].buf);
		if (per_node[workers[i].node] != len / PAGE)
			return 0;
	}
	return 1;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	wl_pin(w->node);
	if (parallel)
		wl_touch(w->buf, len);
	pthread_barrier_wait(&touched);
	pthread_barrier_wait(&go);
	uint64_t sum = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		volatile uint64_t *p = (volatile uint64_t *)w->buf;
		for (long i = 0; i < len / 8; i += 8) {
			sum += p[i];
			if ((i & (PAGE / 8 - 1)) == 0)
				p[i] = sum;
		}
		w->passes++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long mb = 32;
	for (int i = 1; i < argc; i++) {
		if (wl_common(argc, argv, &i))
			continue;
		if (!strcmp(argv[i], "--serial"))
			parallel = 0;
		else if (!strcmp(argv[i], "--parallel"))
			parallel = 1;
		else if (!strcmp(argv[i], "--mb") && i + 1 < argc)
			mb = atol(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			compute_seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--settle") && i + 1 < argc)
			settle_seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--go") && i + 1 < argc)
			go_file = argv[++i];
		else if (!strcmp(argv[i], "--until") && i + 1 < argc)
			until_file = argv[++i];
		else if (!strcmp(argv[i], "--until-local"))
			until_local = 1;
		else
			wl_die("usage: firsttouch --serial|--parallel [--mb N] [--seconds S] [--settle S] "
			       "[--go FILE] [--until FILE] [--until-local] [--out FILE] [--lead S] [--linger S]");
	}
	if (parallel < 0)
		wl_die("say --serial or --parallel");
	if (mb <= 0 || compute_seconds < 0 || settle_seconds < 0)
		wl_die("--mb must be positive, --seconds and --settle not negative");
	/*
	 * Small pages in the whole process, not only in the buffers (wl_alloc):
	 * a worker's stack in a transparent huge page (placed by the main
	 * thread's touch at pthread_create, or collapsed by khugepaged while a
	 * slow run lasts) took one remote hinting fault that migrated 512 pages,
	 * and the worker's node counted 511 pages more than its buffer holds
	 * (TestNUMATrace beside four busy loops). Inherited by nothing: the
	 * workload runs no child.
	 */
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0)
		wl_die("prctl(PR_SET_THP_DISABLE): %s", strerror(errno));
	wl_start();

	int ids[MAX_NODES];
	nworkers = wl_cpu_nodes(ids);
	len = mb << 20;
	struct wl_counters c0, c1, c2;
	wl_snapshot(&c0);

	pthread_barrier_init(&touched, NULL, nworkers + 1);
	pthread_barrier_init(&go, NULL, nworkers + 1);
	for (int i = 0; i < nworkers; i++) {
		workers[i] = (struct worker){.index = i, .node = ids[i], .buf = wl_alloc(len)};
	}
	if (!parallel) {
		/* The bug: one thread initialises everything. */
		wl_pin(ids[0]);
		for (int i = 0; i < nworkers; i++)
			wl_touch(workers[i].buf, len);
	}
	for (int i = 0; i < nworkers; i++)
		if (pthread_create(&workers[i].th, NULL, work, &workers[i]))
			wl_die("pthread_create failed");
	pthread_barrier_wait(&touched);

	wl_snapshot(&c1);
	wl_emit("{\"type\":\"phase\",\"name\":\"init_done\",\"t\":%.3f}", c1.t);
	for (int i = 0; i < nworkers; i++)
		wl_emit_placement("after_init", i, workers[i].node, workers[i].buf, len, c1.nnodes);
	wl_emit_deltas("init", &c0, &c1);
	printf("firsttouch: %s first touch of %d x %ld MiB done at %.2fs; computing for %.1fs\n",
	       parallel ? "parallel" : "serial", nworkers, mb, c1.t, compute_seconds);
	fflush(stdout);

	wl_sleep(settle_seconds);
	while (go_file && access(go_file, F_OK) != 0)
		wl_sleep(0.01);
	wl_emit("{\"type\":\"phase\",\"name\":\"compute_start\",\"t\":%.3f}", wl_elapsed());
	pthread_barrier_wait(&go);
	wl_sleep(compute_seconds);
	while (until_file && access(until_file, F_OK) != 0)
		wl_sleep(0.01);
	while (until_local && !all_local())
		wl_sleep(0.05);
	atomic_store(&stop, 1);
	for (int i = 0; i < nworkers; i++)
		pthread_join(workers[i].th, NULL);

	wl_snapshot(&c2);
	wl_emit("{\"type\":\"phase\",\"name\":\"compute_done\",\"t\":%.3f}", c2.t);
	for (int i = 0; i < nworkers; i++)
		wl_emit_placement("after_compute", i, workers[i].node, workers[i].buf, len, c2.nnodes);
	wl_emit_deltas("compute", &c1, &c2);
	wl_emit_deltas("total", &c0, &c2);
	char passes[1024] = "";
	for (int i = 0; i < nworkers; i++)
		snprintf(passes + strlen(passes), sizeof passes - strlen(passes), "%s%ld", i ? "," : "", workers[i].passes);
	wl_emit("{\"type\":\"summary\",\"workload\":\"firsttouch\",\"mode\":\"%s\",\"workers\":%d,"
		"\"pages_per_worker\":%ld,\"passes\":[%s],\"seconds\":%.3f}",
		parallel ? "parallel" : "serial", nworkers, len / PAGE, passes, wl_elapsed());
	return wl_finish();
}
