// Package suggest finds the known names closest to a mistyped one, so that
// errors about unknown events, presets or PMUs can say "did you mean ...".
package suggest

// Distance is the Levenshtein distance between a and b. Names longer than
// 256 bytes are not worth comparing and get a large distance, which keeps the
// cost bounded whatever the input.
func Distance(a, b string) int {
	if len(a) > 256 || len(b) > 256 {
		return 1 << 20
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
