package bench

import "golang.org/x/sys/cpu"

// The read:write mix and the injectors' delay in assembly (mix_amd64.s),
// apart from the other kernels: AVX2 where the CPU and the kernel support
// it, SSE2 otherwise.

//go:noescape
func mixAVX2(a *float64, groups, reads, writes int) float64

//go:noescape
func mixSSE2(a *float64, groups, reads, writes int) float64

// spin runs n turns of a one-instruction loop (about one cycle each):
// the delay an injector waits between pieces, calibrated by calibrateSpin.
func spin(n int)

// mixAVX2OK is chosen once, by CPUID, as useAVX2.
var mixAVX2OK = cpu.X86.HasAVX2

// mixBlocks runs the mix over a, whose length is a multiple of the group.
func mixBlocks(a []float64, reads, writes int) float64 {
	groups := len(a) / ((reads + writes) * block)
	if groups == 0 {
		return 0
	}
	if mixAVX2OK {
		return mixAVX2(&a[0], groups, reads, writes)
	}
	return mixSSE2(&a[0], groups, reads, writes)
}
