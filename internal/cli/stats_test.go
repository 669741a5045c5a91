package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runMain runs the command line in-process and returns its stdout, stderr
// and exit status. Commands print to os.Stdout and os.Stderr, which are
// swapped for pipes meanwhile (the tests using it do not run in parallel).
func runMain(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outW, errW
	outC, errC := make(chan string), make(chan string)
	go func() { b, _ := io.ReadAll(outR); outC <- string(b) }()
	go func() { b, _ := io.ReadAll(errR); errC <- string(b) }()
	code := Main(args)
	os.Stdout, os.Stderr = oldOut, oldErr
	outW.Close()
	errW.Close()
	return <-outC, <-errC, code
}

// TestStatsAnovaJSON checks the JSON keys the issue names and the numbers of
// Montgomery's Example 5.1 (Table 5.5) through the command line.
func TestStatsAnovaJSON(t *testing.T) {
	out, errs, code := runMain(t, "stats", "anova", "--input", "testdata/battery.csv", "--response", "life",
		"--factors", "material,temperature", "--confidence", "0.95", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Mean  *float64 `json:"mean"`
		Terms []struct {
			Name             string   `json:"name"`
			SS               *float64 `json:"ss"`
			DoF              *int     `json:"dof"`
			MS               *float64 `json:"ms"`
			F                *float64 `json:"f"`
			P                *float64 `json:"p"`
			PercentVariation *float64 `json:"percent_variation"`
		} `json:"terms"`
		Error   map[string]float64            `json:"error"`
		Total   map[string]float64            `json:"total"`
		Effects map[string]map[string]float64 `json:"effects"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.Mean == nil || len(res.Terms) != 3 || res.Effects["temperature"]["125"] >= 0 {
		t.Fatalf("result %+v", res)
	}
	names := []string{"material", "temperature", "material:temperature"}
	ss := []float64{10683.72, 39118.72, 9613.78}
	for i, term := range res.Terms {
		if term.Name != names[i] || term.SS == nil || term.DoF == nil || term.MS == nil || term.F == nil || term.P == nil || term.PercentVariation == nil {
			t.Fatalf("term %d: %+v", i, term)
		}
		if d := *term.SS - ss[i]; d > 0.01 || d < -0.01 {
			t.Errorf("%s SS = %v, Montgomery %v", term.Name, *term.SS, ss[i])
		}
	}
	if res.Error["dof"] != 27 || res.Total["dof"] != 35 || res.Error["ss"] != 18230.75 {
		t.Errorf("error %v total %v", res.Error, res.Total)
	}
}

func TestStatsAnovaText(t *testing.T) {
	out, errs, code := runMain(t, "stats", "anova", "-i", "testdata/battery.csv", "-r", "life", "-f", "material,temperature", "--log")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"ANOVA of life", "analysed as ln y", "temperature: significant at 90% confidence",
		"Contrasts between levels", "Residuals: QQ correlation"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestStatsAnovaErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("a,b,y\n1,x,1\n1,y,2\n2,x,three\n2,y,4\n"), 0o644)
	short := filepath.Join(dir, "short.csv")
	os.WriteFile(short, []byte("a,b,y\n1,x,1\n1,y,2\n2,x,3\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--input", bad, "--response", "y", "--factors", "a,b"}, `bad.csv: line 4: response y = "three" is not a finite number`},
		{[]string{"--input", short, "--response", "y", "--factors", "a,b"}, "unbalanced design: cell a=2,b=y has 0 observation(s)"},
		{[]string{"--input", short, "--response", "z", "--factors", "a,b"}, `line 1: no response column "z"`},
		{[]string{"--input", filepath.Join(dir, "none.csv"), "--response", "y", "--factors", "a"}, "cannot read the input"},
		{[]string{"--input", short, "--response", "y"}, "--factors are required"},
		{[]string{"--input", short, "--response", "y", "--factors", "a,b", "--format", "xml"}, `--format "xml"`},
		{[]string{"--input", short, "--response", "y", "--factors", "a,,b"}, "empty factor name"},
	} {
		_, errs, code := runMain(t, append([]string{"stats", "anova"}, c.args...)...)
		if code != 1 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want one line containing %q", c.args, code, errs, c.want)
		}
	}
}
