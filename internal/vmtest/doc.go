// Package vmtest holds numascope's multi-node integration tests. It has no
// code of its own: its tests boot a NUMA virtual machine with scripts/numavm
// (QEMU under TCG, 4 or 8 emulated nodes), run numascope and the known-answer
// workloads of testdata/workloads inside it, and check numascope's numbers
// against the topology that was asked for and against the workloads' own
// ground truth (move_pages placement and kernel counter deltas).
//
// Why a VM: the build machines have one NUMA node, and everything numascope
// claims is about multi-node behaviour. QEMU's NUMA emulation is exact for
// what the kernel does in software: first-touch placement, memory policies,
// per-node numastat and meminfo, automatic NUMA balancing.
//
// The tests skip, saying why, when QEMU or the kernel is absent, unless
// NUMASCOPE_VM_REQUIRED is set (as in CI), when they fail instead; they also
// skip under -short. docs/testing.md says how to run one scenario by hand and
// how to add one.
package vmtest
