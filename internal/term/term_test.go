package term

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

func TestHuman(t *testing.T) {
	cases := []struct {
		v    float64
		unit string
		want string
	}{
		{0, "pages", "0"},
		{999, "pages", "999"},
		{1000, "pages", "1.00K"},
		{12345, "pages", "12.3K"},
		{123456789, "faults", "123M"},
		{1536, "bytes", "1.50K"},
		{4 << 30, "bytes", "4.00G"},
		{12.345, "%", "12.3"},
		{0.5, "pages", "0.50"},
		{-2500, "pages", "-2.50K"},
	}
	for _, c := range cases {
		if got := Human(c.v, c.unit); got != c.want {
			t.Errorf("human(%v %s) = %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}

func TestRaw(t *testing.T) {
	if got := string(appendRaw(nil, 123456789012, "pages")); got != "123456789012" {
		t.Errorf("raw int = %q", got)
	}
	if got := string(appendRaw(nil, 1.5, "pages")); got != "1.5" {
		t.Errorf("raw float = %q", got)
	}
	if got := string(appendRaw(nil, 33.3333333, "%")); got != "33.33" {
		t.Errorf("raw pct = %q", got)
	}
	if got := string(appendRaw(nil, 23.9892796, "pages")); got != "23.9893" {
		t.Errorf("raw rate = %q", got)
	}
	if got := string(appendRaw(nil, 1234567.8, "pages")); got != "1234568" {
		t.Errorf("large raw rate = %q", got)
	}
}

func TestPrinterRepeatsHeadingsAndAligns(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out, []Column{{"numa_hit", "pages"}, {"idle", "%"}}, Options{Human: true, Repeat: 3})
	for i := 0; i < 7; i++ {
		if err := p.Sample(time.Duration(i+1)*time.Second, []float64{float64(i * 1000), 50}); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 10 { // 7 samples + headings before samples 1, 4, 7
		t.Fatalf("got %d lines:\n%s", len(lines), out.String())
	}
	for _, i := range []int{0, 4, 8} {
		if strings.Fields(lines[i])[1] != "numa_hit" {
			t.Errorf("line %d is not a heading: %q", i, lines[i])
		}
	}
	if lines[0] != "     time numa_hit   idle" || lines[2] != "    2.000    1.00K   50.0" {
		t.Errorf("alignment:\n%q\n%q", lines[0], lines[2])
	}
}

func TestPrinterCSVAndNaN(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out, []Column{{"a", "pages"}, {"b,c", "pages"}}, Options{CSV: true, Repeat: 2})
	_ = p.Sample(time.Second, []float64{1, math.NaN()})
	_ = p.Sample(2*time.Second, []float64{2.5, 3})
	_ = p.Sample(3*time.Second, []float64{4, 5})
	want := "time_s,a,\"b,c\"\n1.000000,1,\n2.000000,2.5,3\n3.000000,4,5\n"
	if out.String() != want {
		t.Errorf("csv:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestPrinterDoesNotAllocate(t *testing.T) {
	var out bytes.Buffer
	out.Grow(1 << 20)
	p := NewPrinter(&out, []Column{{"a", "pages"}, {"b", "bytes"}, {"c", "%"}}, Options{Human: true, Repeat: 25})
	vals := []float64{123456, 1 << 30, 12.5}
	allocs := testing.AllocsPerRun(500, func() { _ = p.Sample(time.Second, vals) })
	if allocs != 0 {
		t.Errorf("Sample allocates %v times", allocs)
	}
}

// TestPrinterUnitsLine: with Units, a second heading line gives each
// column's unit, aligned under its heading and repeated with it; CSV keeps
// one heading line of column names.
func TestPrinterUnitsLine(t *testing.T) {
	var out bytes.Buffer
	cols := []Column{{Heading: "numa_hit", Unit: "pages"}, {Heading: "MemFree", Unit: "bytes"}, {Heading: "idle", Unit: "%"}}
	p := NewPrinter(&out, cols, Options{Human: true, Repeat: 2, Units: []string{"pages/s", "bytes", "%"}})
	for i := 0; i < 3; i++ {
		if err := p.Sample(time.Duration(i+1)*time.Second, []float64{35000, 6 << 30, 50}); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{
		"     time numa_hit MemFree   idle",
		"        s  pages/s   bytes      %",
		"    1.000    35.0K   6.00G   50.0",
	}
	if len(lines) != 7 || lines[0] != want[0] || lines[1] != want[1] || lines[2] != want[2] || lines[4] != want[0] || lines[5] != want[1] {
		t.Errorf("got:\n%s\nwant headings, units and values aligned:\n%s", out.String(), strings.Join(want, "\n"))
	}
	out.Reset()
	p = NewPrinter(&out, cols, Options{CSV: true, Units: []string{"pages/s", "bytes", "%"}})
	if err := p.Sample(time.Second, []float64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "time_s,numa_hit,MemFree,idle\n1.000000,1,2,3\n" {
		t.Errorf("CSV with units: %q", got)
	}
}
