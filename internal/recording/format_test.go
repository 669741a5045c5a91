package recording

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"time"
)

func TestAppendValue(t *testing.T) {
	cases := []struct {
		v    float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{-42, "-42"},
		{123456789, "123456789"},
		{999999999, "999999999"},
		{1e9, "1000000000"},
		{1234567890123, "1234567890123"}, // integers stay exact
		{123456789.7, "123456790"},       // rounds to an integer
		{99999999999999.9, "100000000000000"},
		{999999999999999, "999999999999999"},
		{999999999999999.5, "1e15"}, // nine digits round up to 1e15: exponent form
		{1e15, "1e15"},
		{1.5e20, "1.5e20"},
		{-2.5e-7, "-2.5e-7"},
		{0.1, "0.1"},
		{0.0001, "0.0001"},
		{0.00012345678912, "0.000123456789"},
		{0.00001, "1e-5"},
		{12.5, "12.5"},
		{1.0 / 3, "0.333333333"},
		{2.0 / 3 * 100, "66.6666667"},
		{-1234.56789012, "-1234.56789"},
		{12345678.95, "12345678.9"}, // 12345678.949999999 in binary
		{math.NaN(), "null"},
		{math.Inf(1), "null"},
		{math.Inf(-1), "null"},
	}
	for _, c := range cases {
		got := string(appendValue(nil, c.v))
		if got != c.want {
			t.Errorf("appendValue(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// Every output must be valid JSON and within nine significant digits of the
// input.
func TestAppendValueRoundTrip(t *testing.T) {
	vals := []float64{1, 3.14159265358979, 2.718281828e-9, 6.02214076e23, 1e-300, 1.7976931348623157e308,
		123.000000001, 4.9e-324, 0.5, 1e14 + 0.5, 7e-5, 99999.99999}
	for e := -20; e <= 20; e++ {
		vals = append(vals, 1.2345678912345*math.Pow(10, float64(e)), -9.87654321987*math.Pow(10, float64(e)))
	}
	for _, v := range vals {
		s := appendValue(nil, v)
		var back float64
		if err := json.Unmarshal(s, &back); err != nil {
			t.Fatalf("appendValue(%v) = %q: not JSON: %v", v, s, err)
		}
		if rel := math.Abs(back-v) / math.Abs(v); rel > 5e-9 {
			t.Errorf("appendValue(%v) = %q: relative error %g", v, s, rel)
		}
		want := strconv.FormatFloat(v, 'e', 8, 64)
		if v == math.Trunc(v) && math.Abs(v) < 1e15 {
			want = strconv.FormatFloat(v, 'f', -1, 64) // integers are exact
		}
		if w, _ := strconv.ParseFloat(want, 64); w != back {
			t.Errorf("appendValue(%v) = %q, reads back as %v; want the nine-digit rounding %v", v, s, back, w)
		}
	}
}

func TestAppendSeconds(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want string
	}{
		{0, "0"},
		{time.Second, "1"},
		{12500 * time.Millisecond, "12.5"},
		{100 * time.Millisecond, "0.1"},
		{time.Microsecond, "0.000001"},
		{1500 * time.Nanosecond, "0.000002"}, // rounded to µs
		{-250 * time.Millisecond, "-0.25"},
		{3*time.Hour + 7*time.Microsecond, "10800.000007"},
	}
	for _, c := range cases {
		if got := string(appendSeconds(nil, c.d)); got != c.want {
			t.Errorf("appendSeconds(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
