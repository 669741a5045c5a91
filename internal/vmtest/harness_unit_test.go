package vmtest

import (
	"math"
	"testing"
)

// The harness's own parsing, checked without a VM: a wrong integral or a
// mis-split section would make every VM assertion meaningless.

func TestParseSections(t *testing.T) {
	out := "numavm noise\n" +
		"@@begin a\nline 1\nline 2\n\n@@end a 0\n" +
		"between\n" +
		"@@begin b\npartial line without newline\n@@end b 3\n" +
		"@@begin c\nnever ended\n"
	secs := parseSections(out)
	if got := secs["a"]; got.Body != "line 1\nline 2\n" || got.RC != 0 {
		t.Errorf("section a = %+v", got)
	}
	if got := secs["b"]; got.Body != "partial line without newline" || got.RC != 3 {
		t.Errorf("section b = %+v", got)
	}
	if _, ok := secs["c"]; ok {
		t.Errorf("an unterminated section was accepted")
	}
	if len(secs) != 2 {
		t.Errorf("got %d sections, want 2", len(secs))
	}
}

// TestSectionProgress: a run cut off by its time limit says which
// sections ended, how long each took, and which one was running.
func TestSectionProgress(t *testing.T) {
	out := "@@at a begin 10.00\n@@begin a\nx\n@@end a 0\n@@at a end 12.50\n" +
		"@@at b begin 12.60\n@@begin b\nstill going\n"
	if got, want := sectionProgress(out), `1 sections done (a 2.5s); section "b" running since guest uptime 12.6s`; got != want {
		t.Errorf("sectionProgress = %q, want %q", got, want)
	}
	if got := sectionProgress("@@at a begin 1.00\n@@at a end 2.00\n"); got != "1 sections done (a 1.0s); none running (between sections, or before the first)" {
		t.Errorf("sectionProgress after the last section = %q", got)
	}
}

func TestSeriesTotal(t *testing.T) {
	// A counter that grew by 100 in [-0.2, 0] (before the first sample,
	// which is time 0), 50 in [0, 0.2], 0 in [0.2, 0.5] and 300 in
	// [0.5, 1.0], recorded as rates; a missing cell counts as nothing.
	csv := "time_s,vmstat.x,node.0.g\n" +
		"0,500,10\n" +
		"0.2,250,10\n" +
		"0.5,0,\n" +
		"1.0,600,30\n" +
		"1.2,,20\n"
	s, err := parseCSV(csv)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.total(t, "vmstat.x"); math.Abs(got-450) > 1e-9 {
		t.Errorf("total = %v, want 450", got)
	}
	if got := s.totalUntil(t, "vmstat.x", 1); math.Abs(got-150) > 1e-9 {
		t.Errorf("totalUntil(1) = %v, want 150", got)
	}
	// A clock that does not start at 0 gives the first interval itself.
	s2, err := parseCSV("time_s,a\n0.5,10\n1.0,10\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := s2.total(t, "a"); math.Abs(got-10) > 1e-9 {
		t.Errorf("total from 0.5 = %v, want 10", got)
	}
	if got := s.firstValue(t, "node.0.g"); got != 10 {
		t.Errorf("firstValue = %v", got)
	}
	if got := s.lastValue(t, "node.0.g"); got != 20 {
		t.Errorf("lastValue = %v", got)
	}
	if got := s.argmax(func(i int) float64 { return s.Cols["node.0.g"][i] }); got != 3 {
		t.Errorf("argmax = %d, want 3", got)
	}
}

func TestParseCSVErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":      "",
		"no samples": "time_s,a\n",
		"bad header": "t,a\n1,2\n",
		"bad time":   "time_s,a\nx,2\n",
		"bad value":  "time_s,a\n1,zz\n",
		"ragged":     "time_s,a\n1,2,3\n",
	} {
		if _, err := parseCSV(in); err == nil {
			t.Errorf("%s: parseCSV accepted %q", name, in)
		}
	}
}

func TestDistanceFlag(t *testing.T) {
	if got := distanceFlag(twoLevel(2)); got != "10,20;20,10" {
		t.Errorf("distanceFlag(twoLevel(2)) = %q", got)
	}
	d := twoBoards()
	if d[0][3] != 16 || d[3][4] != 32 || d[7][7] != 10 || d[5][6] != 16 || d[6][1] != 32 {
		t.Errorf("twoBoards = %v", d)
	}
}
