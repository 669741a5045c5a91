package vmtest

import (
	"fmt"
	"strings"
	"testing"
)

// runPlacement is one `numascope run` of the firsttouch workload in serial
// mode: the main thread, pinned to node 0, first-touches every buffer, so
// where the pages land is decided by the memory policy alone.
type runPlacement struct {
	name, policy string
	// want gives, for a buffer of `pages` pages, the acceptable page count
	// range on each of the VM's nodes.
	want func(node int, pages float64) (lo, hi float64)
}

// TestRunPlacesPages checks that `numascope run` applies each memory policy
// to the command it execs: the workload reports where its pages are with
// move_pages, the truth the kernel keeps; and that --cpus and --nodes set the
// child's CPU affinity, and that invalid lists are refused naming the range.
func TestRunPlacesPages(t *testing.T) {
	requireVM(t)
	const nodes, mb = 4, 16
	all := func(node int) func(int, float64) (float64, float64) {
		return func(k int, pages float64) (float64, float64) {
			if k == node {
				return 0.99 * pages, pages
			}
			return 0, 0.01 * pages
		}
	}
	cases := []runPlacement{
		{"firsttouch", "first-touch", all(0)},
		{"bind", "bind:2", all(2)},
		{"preferred", "preferred:3", all(3)},
		{"interleave", "interleave:1-3", func(k int, pages float64) (float64, float64) {
			if k == 0 {
				return 0, 2
			}
			return pages/3 - 2, pages/3 + 2
		}},
	}
	var script strings.Builder
	for _, c := range cases {
		fmt.Fprintf(&script, "sec %s numascope run --policy %s -- firsttouch --serial --mb %d --settle 0 --seconds 0 --lead 0 --linger 0 --out /tmp/%s.wl\n",
			c.name, c.policy, mb, c.name)
		fmt.Fprintf(&script, "sec %s.wl cat /tmp/%s.wl\n", c.name, c.name)
	}
	script.WriteString("sec maps numascope run --policy interleave:0-1 -- cat /proc/self/numa_maps\n")
	script.WriteString("sec cpus numascope run --cpus 2 -- grep Cpus_allowed_list /proc/self/status\n")
	script.WriteString("sec nodes numascope run --nodes 1,3 -- grep Cpus_allowed_list /proc/self/status\n")
	script.WriteString("sec badnode sh -c 'numascope run --policy bind:4 -- true 2>&1; echo rc=$?'\n")
	script.WriteString("sec badcpu sh -c 'numascope run --cpus 0-9 -- true 2>&1; echo rc=$?'\n")
	r := runVM(t, []string{"--nodes", fmt.Sprint(nodes)}, script.String())

	pages := float64(mb << 20 / pageSize)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r.section(t, c.name)
			wl := parseWorkload(t, r.section(t, c.name+".wl"))
			for _, p := range wl.placements(t, "after_init") {
				if len(p.PerNode) < nodes {
					t.Fatalf("buffer %d: per_node %v has fewer than %d nodes", p.Buffer, p.PerNode, nodes)
				}
				for k := 0; k < nodes; k++ {
					lo, hi := c.want(k, pages)
					within(t, fmt.Sprintf("--policy %s: buffer %d pages on node %d", c.policy, p.Buffer, k),
						float64(p.PerNode[k]), lo, hi)
				}
			}
		})
	}
	t.Run("numa_maps", func(t *testing.T) {
		maps := r.section(t, "maps")
		if !strings.Contains(maps, " interleave:0-1 ") {
			t.Errorf("the child's numa_maps shows no interleave:0-1 mapping:\n%s", tail(maps, 2000))
		}
	})
	t.Run("affinity", func(t *testing.T) {
		if got := strings.TrimSpace(r.section(t, "cpus")); got != "Cpus_allowed_list:\t2" {
			t.Errorf("--cpus 2: child has %q", got)
		}
		// One CPU per node: node 1 has CPU 1, node 3 CPU 3.
		if got := strings.TrimSpace(r.section(t, "nodes")); got != "Cpus_allowed_list:\t1,3" {
			t.Errorf("--nodes 1,3: child has %q", got)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		for sec, want := range map[string]string{
			"badnode": "node 4 does not exist; the nodes are 0-3",
			"badcpu":  "CPU 4 does not exist; usable CPUs: 0-3",
		} {
			out := r.section(t, sec)
			if !strings.Contains(out, want) || !strings.Contains(out, "rc=1") {
				t.Errorf("%s: got %q, want an error containing %q and status 1", sec, out, want)
			}
		}
	})
}
