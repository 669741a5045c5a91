/*
 * interleave: allocate memory under an interleave policy, with known answers.
 *
 *   interleave [--mb N] [--mbind] [--hold S] [--out FILE] [--lead S] [--linger S]
 *
 * Sets MPOL_INTERLEAVE over every online node, for the whole process with
 * set_mempolicy (default) or for the buffer only with mbind (--mbind), then
 * first-touches N MiB (default 64) of small pages and holds them --hold
 * seconds (default 2) before it exits, so that a sampler sees the level.
 * Pages go round-robin over the nodes, and every node's interleave_hit
 * counter grows by about N MiB / nodes / 4 KiB.
 *
 * Ground truth printed (see workload.h): the buffer's placement ("after_touch")
 * and the counter deltas over the touch ("touch"), then a "summary".
 */
#include "workload.h"

int main(int argc, char **argv)
{
	long mb = 64;
	int use_mbind = 0;
	double hold = 2;
	for (int i = 1; i < argc; i++) {
		if (wl_common(argc, argv, &i))
			continue;
		if (!strcmp(argv[i], "--mb") && i + 1 < argc)
			mb = atol(argv[++i]);
		else if (!strcmp(argv[i], "--mbind"))
			use_mbind = 1;
		else if (!strcmp(argv[i], "--hold") && i + 1 < argc)
			hold = atof(argv[++i]);
		else
			wl_die("usage: interleave [--mb N] [--mbind] [--hold S] [--out FILE] [--lead S] [--linger S]");
	}
	if (mb <= 0 || hold < 0)
		wl_die("--mb must be positive and --hold not negative");
	wl_start();

	int ids[MAX_NODES];
	int nnodes = wl_nodes(ids);
	unsigned long mask[MAX_NODES / (8 * sizeof(unsigned long)) + 1] = {0};
	for (int i = 0; i < nnodes; i++)
		mask[ids[i] / (8 * sizeof(unsigned long))] |= 1UL << (ids[i] % (8 * sizeof(unsigned long)));
	unsigned long maxnode = MAX_NODES + 1;

	long len = mb << 20;
	struct wl_counters c0, c1;
	char *buf = wl_alloc(len);
	if (use_mbind) {
		if (syscall(SYS_mbind, buf, len, WL_MPOL_INTERLEAVE, mask, maxnode, 0) < 0)
			wl_die("mbind MPOL_INTERLEAVE: %s", strerror(errno));
	} else if (syscall(SYS_set_mempolicy, WL_MPOL_INTERLEAVE, mask, maxnode) < 0) {
		wl_die("set_mempolicy MPOL_INTERLEAVE: %s", strerror(errno));
	}

	wl_snapshot(&c0);
	wl_touch(buf, len);
	wl_snapshot(&c1);
	wl_emit_placement("after_touch", 0, -1, buf, len, c1.nnodes);
	wl_emit_deltas("touch", &c0, &c1);
	printf("interleave: %ld MiB over %d nodes with %s in %.2fs; holding %.1fs\n", mb, nnodes,
	       use_mbind ? "mbind" : "set_mempolicy", c1.t - c0.t, hold);
	fflush(stdout);
	wl_sleep(hold);
	wl_emit("{\"type\":\"summary\",\"workload\":\"interleave\",\"policy\":\"%s\",\"nodes\":%d,\"pages\":%ld,"
		"\"seconds\":%.3f}",
		use_mbind ? "mbind" : "set_mempolicy", nnodes, len / PAGE, wl_elapsed());
	return wl_finish();
}
