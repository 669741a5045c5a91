package stats

import (
	"encoding/json"
	"io"
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
