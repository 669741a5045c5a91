package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/placement"
	"github.com/numascope/numascope/internal/sysfs"
)

func newRunCmd(g *globals) *cobra.Command {
	var policy, cpus, nodes string
	var threadsPerNode int
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "run [--policy POLICY] [--cpus LIST | --nodes LIST] [--threads-per-node N] -- CMD [ARGS...]",
		Short: "Run a command under a memory policy and CPU affinity, like numactl",
		Long: `Run CMD with a NUMA memory policy and CPU affinity, as numactl does: numascope sets both on
itself and then execs CMD, which inherits them (so the exit status is CMD's own).

Memory policies (--policy):
  first-touch         the kernel default: a page lands on the node of the CPU that first touches it
  interleave[:NODES]  pages round-robin over NODES (default: every allowed node with memory)
  bind:NODES          pages only on NODES
  preferred:NODE      pages on NODE while it has free memory, elsewhere after
  local               pages on the node of the allocating CPU, overriding an inherited policy

CPUs: --cpus LIST runs CMD on those CPUs; --nodes LIST on every CPU of those nodes;
--threads-per-node N keeps N CPUs of each node (of --nodes, or of every node), one per core
first. Lists use the kernel's format (0-3,8). Nodes and CPUs are checked against the
topology; an invalid one is an error naming the valid range. --dry-run prints the plan.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() < 0 && len(args) > 0 {
				return fmt.Errorf("put -- before the command: numascope run [flags] -- %s", args[0])
			}
			if len(args) == 0 && !dryRun {
				return fmt.Errorf("no command to run: numascope run [flags] -- CMD [ARGS...]")
			}
			_, topo, err := g.discover()
			if err != nil {
				return err
			}
			var plan placement.Plan
			if plan.Policy, err = placement.ParsePolicy(policy, topo); err != nil {
				return err
			}
			if plan.CPUs, err = placement.ResolveCPUs(cpus, nodes, threadsPerNode, topo); err != nil {
				return err
			}
			if dryRun {
				fmt.Fprintf(os.Stdout, "policy %s\ncpus %s\n", plan.Policy, cpuListOrAll(plan.CPUs))
				return nil
			}
			return plan.Exec(args, os.Environ())
		},
	}
	f := cmd.Flags()
	f.StringVar(&policy, "policy", "first-touch", placement.PolicySyntax)
	f.StringVar(&cpus, "cpus", "", "run on these CPUs (list like 0-3,8)")
	f.StringVar(&nodes, "nodes", "", "run on the CPUs of these nodes (list like 0-1)")
	f.IntVar(&threadsPerNode, "threads-per-node", 0, "keep N CPUs of each node (one per core first)")
	f.BoolVar(&dryRun, "dry-run", false, "print the resolved plan instead of running")
	f.SetInterspersed(false)
	return cmd
}

func cpuListOrAll(cpus []int) string {
	if len(cpus) == 0 {
		return "unchanged"
	}
	return sysfs.FormatCPUList(cpus)
}
