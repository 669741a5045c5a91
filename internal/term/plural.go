package term

import "strconv"

// Plural is a count and its noun in agreement: "1 thread", "2 threads",
// "0 threads". Every count a user reads goes through it: "1 threads" was
// shown by top's drill-down.
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
