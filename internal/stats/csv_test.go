package stats

import (
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"
)

func TestReadCSV(t *testing.T) {
	in := "\ufeff# a comment\nregime, threads ,time_s,host\nft,1,2.5,a\n\nil, 2 ,3e0,b\n"
	obs, err := ReadCSV(strings.NewReader(in), "time_s", []string{"regime", "threads"})
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != 2 || obs[0].Value != 2.5 || obs[1].Levels[1] != "2" || obs[1].Levels[0] != "il" || obs[1].Value != 3 {
		t.Fatalf("got %+v", obs)
	}
}

func TestReadCSVErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "the CSV is empty"},
		{"a,c,y\n", "no data lines"},
		{"a,b,y\n1,2,3\n", `line 1: no factor column "c"`},
		{"a,c,z\n1,2,3\n", `line 1: no response column "y" in the header (columns: a, c, z)`},
		{"a,c,y\n1,2,3\n1,2,fast\n", `line 3: response y = "fast" is not a finite number`},
		{"a,c,y\n1,2,3\n1,2,NaN\n", `line 3: response y = "NaN"`},
		{"a,c,y\n1,2,3\n1,2\n", "line 3: wrong number of fields"},
		{"a,c,y\n1,,3\n", "line 2: factor c has an empty level"},
		{"a,c,y\n1,\"2,3\n", "line 2, column"},
		{"a,a,y\n1,2,3\n", `line 1: column "a" appears twice`},
	} {
		_, err := ReadCSV(strings.NewReader(c.in), "y", []string{"a", "c"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.in, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error spans lines: %q", c.in, err)
		}
	}
}

// FuzzReadCSV checks that no input makes the reader or the analysis panic,
// and that errors stay one line.
func FuzzReadCSV(f *testing.F) {
	f.Add("a,b,y\n1,x,2\n1,z,3\n2,x,4\n2,z,5\n")
	f.Add("a,b,y\n1,x,2\n1,x,2.5\n1,z,3\n1,z,3.1\n2,x,4\n2,x,4.2\n2,z,5\n2,z,5.5\n")
	f.Add("a,b,y\n\"1\n\",x,1e308\n")
	f.Add("# c\n\ufeffa,b,y\n1,x,-0\n")
	f.Fuzz(func(t *testing.T, in string) {
		obs, err := ReadCSV(strings.NewReader(in), "y", []string{"a", "b"})
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		for _, log := range []bool{false, true} {
			r, err := Analyze([]Factor{{Name: "a"}, {Name: "b"}}, obs, Options{Log: log})
			if err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("multi-line error %q", err)
				}
				continue
			}
			if len(r.Residuals) != len(obs) {
				t.Fatalf("%d residuals for %d observations", len(r.Residuals), len(obs))
			}
			if _, err := json.Marshal(r); err != nil {
				t.Fatalf("the result does not encode: %v", err)
			}
			if err := r.WriteText(io.Discard, "y"); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestReadCSVBounds: a line over MaxLine bytes, an input over MaxInput
// bytes and more than MaxObservations data lines are each refused with a
// one-line error naming the line, while reading holds a bounded amount of
// memory: the long line is refused before it is buffered whole.
func TestReadCSVBounds(t *testing.T) {
	head := "a,b,y\n1,x,2\n"
	long := io.MultiReader(strings.NewReader(head+"1,"), &repeat{b: 'x', n: 200 << 20}, strings.NewReader(",3\n"))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ReadCSV(long, "y", []string{"a", "b"})
	runtime.ReadMemStats(&after)
	if err == nil || err.Error() != "line 3: the line is longer than 1 MiB, the limit of a line: is this the right file?" {
		t.Errorf("200 MB line: %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("reading up to the long line allocated %d MiB", grew>>20)
	}

	// Lines of 1000 bytes, 70 000 of them: 70 MB.
	line := "1," + strings.Repeat("x", 995) + ",3\n"
	big := io.MultiReader(strings.NewReader(head), &repeatLine{line: line, n: 70_000})
	if _, err := ReadCSV(big, "y", []string{"a", "b"}); err == nil || err.Error() != "line 67111: the input is larger than 64 MiB, the limit: is this the right file?" {
		t.Errorf("70 MB input: %v", err)
	}

	many := io.MultiReader(strings.NewReader(head), &repeatLine{line: "1,x,2\n", n: MaxObservations})
	if _, err := ReadCSV(many, "y", []string{"a", "b"}); err == nil || err.Error() != "line 1000002: more than 1000000 data lines, the limit: is this the right file?" {
		t.Errorf("%d lines: %v", MaxObservations+1, err)
	}

	// At the bounds: a line of MaxLine bytes is read.
	edge := head + "1," + strings.Repeat("x", MaxLine-4) + ",3\n" + "2,x,3\n2," + strings.Repeat("x", MaxLine-4) + ",4\n"
	if obs, err := ReadCSV(strings.NewReader(edge), "y", []string{"a", "b"}); err != nil || len(obs) != 4 {
		t.Errorf("lines of %d bytes: %d observations, %v", MaxLine, len(obs), err)
	}
}

// repeat reads as n copies of b, without holding them.
type repeat struct {
	b byte
	n int
}

func (r *repeat) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = r.b
	}
	r.n -= k
	return k, nil
}

// repeatLine reads as n copies of line.
type repeatLine struct {
	line string
	n    int
	off  int
}

func (r *repeatLine) Read(p []byte) (int, error) {
	k := 0
	for k < len(p) && r.n > 0 {
		c := copy(p[k:], r.line[r.off:])
		k += c
		r.off += c
		if r.off == len(r.line) {
			r.off = 0
			r.n--
		}
	}
	if k == 0 {
		return 0, io.EOF
	}
	return k, nil
}
