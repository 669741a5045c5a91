// Package benchtest holds the correctness tests of the benchmark programs in
// testdata/bench: the bare C sampler that scripts/bench measures numascope
// against, and the EP-like kernel of scripts/bench-ep. A benchmark against a
// baseline that writes other bytes, or a workload that computes something
// else, measures nothing, so these tests build both with gcc and check what
// they write against internal/recording and internal/term, and what they
// compute against the same arithmetic in Go. No timing is asserted: the
// figures themselves come from the scripts (docs/performance.md).
package benchtest
