package stats

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkAnalyze3x4x5r10 analyses a 3-factor design (3x4x5 levels, 10
// replications: 600 observations), the size of a large experiment.
func BenchmarkAnalyze3x4x5r10(b *testing.B) {
	factors, obs := randomDesign(rand.New(rand.NewPCG(1, 1)), []int{3, 4, 5}, 10)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze(factors, obs, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
