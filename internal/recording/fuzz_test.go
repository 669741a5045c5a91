package recording

import (
	"bytes"
	"os"
	"testing"
)

// validPrefix is a recording of a header and three samples that every
// FuzzLoad input is appended to.
func validPrefix(t testing.TB) ([]byte, []Sample) {
	var buf bytes.Buffer
	w := NewWriter(&buf, false)
	h := &Header{Columns: []Column{{Sensor: "a", Event: "x"}, {Sensor: "a", Event: "y"}}}
	if err := w.WriteHeader(h); err != nil {
		t.Fatal(err)
	}
	want := []Sample{{0.1, []float64{1, 2}}, {0.2, []float64{nan, 2.5}}, {0.3, []float64{-7, 1e-9}}}
	for _, s := range want {
		if err := w.WriteSample(ms(int(s.T*1000)), s.V); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), want
}

// FuzzLoad: no input makes the reader panic, and a valid header and samples
// followed by anything keep those samples.
func FuzzLoad(f *testing.F) {
	var full bytes.Buffer
	writeTest(f, NewWriter(&full, false))
	f.Add(full.Bytes())
	var zst bytes.Buffer
	writeTest(f, NewWriter(&zst, true))
	f.Add(zst.Bytes())
	f.Add(zst.Bytes()[:zst.Len()/2])
	f.Add([]byte(headerLine + "\n[1,2,3]\n[1,2\n{\"type\":\"columns\",\"t\":1,\"columns\":[{\"name\":\"a.x\"}]}\n[2,5]\n"))
	f.Add([]byte("[1,2,3]\n{\"type\":\"end\"}\n"))
	f.Add([]byte("{\"type\":\"label\",\"t\":1e400}\n[1e400,-0,0.5e-400]\n"))
	f.Add([]byte("\n\n{\"type\":\"header\",\"format\":\"numascope\",\"version\":1,\"columns\":[{},{\"name\":\"\"},{\"name\":\"\"}]}\n[0,1,2,3]\n"))
	for _, name := range []string{"testdata/legacy-numaconnect2.json", "testdata/legacy-vmstat-interrupted.json"} {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	prefix, want := validPrefix(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if rec, err := Read(bytes.NewReader(data)); err == nil {
			for i, s := range rec.Samples {
				if len(s.V) != len(rec.Columns) {
					t.Fatalf("sample with %d values for %d columns", len(s.V), len(rec.Columns))
				}
				if i > 0 && s.T < rec.Samples[i-1].T {
					t.Fatalf("sample %d at t=%v after t=%v: time goes backwards", i, s.T, rec.Samples[i-1].T)
				}
			}
			for _, m := range rec.Labels() {
				if m.Text == "" || SanitizeText(m.Text) != m.Text {
					t.Fatalf("label %q read uncleaned", m.Text)
				}
			}
		}
		in := append(append([]byte(nil), prefix...), data...)
		rec, err := Read(bytes.NewReader(in))
		if err != nil {
			t.Fatalf("valid header and samples, then %q: %v", data, err)
		}
		if len(rec.Samples) < len(want) {
			t.Fatalf("lost samples: %d < %d (appended %q)", len(rec.Samples), len(want), data)
		}
		for i, s := range want {
			got := rec.Samples[i]
			if got.T != s.T || !sameFloat(got.V[0], s.V[0]) || !sameFloat(got.V[1], s.V[1]) {
				t.Fatalf("sample %d = %v, want %v (appended %q)", i, got, s, data)
			}
		}
	})
}

// FuzzLegacy: no input makes the legacy importer panic, and a valid start
// followed by anything keeps its rows.
func FuzzLegacy(f *testing.F) {
	for _, name := range []string{"testdata/legacy-numaconnect2.json", "testdata/legacy-vmstat-interrupted.json"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte(`[["x",1,100],["% a:0","b"],[1,2,3],["label",2,{"x":1}],[3,null,1e999],[4,"5",6]]`))
	f.Add([]byte("[[\"x\",\"a\"],\n[1,2],\nnot json\n[3,4]]"))
	f.Add([]byte(`[["",99999999,-1],["::","a:99999","b:-1","c:+2"],[-5,1,2,3,4]]`))
	const prefix = "[[\"NumaConnect2\",2,200000000],\n[\"a:0\",\"% b:1\"],\n[1561449935018346,1,50000000],\n[1561449935118346,2,100000000],\n"
	f.Fuzz(func(t *testing.T, data []byte) {
		Read(bytes.NewReader(append([]byte("["), data...)))
		Read(bytes.NewReader(data))
		rec, err := Read(bytes.NewReader(append([]byte(prefix), data...)))
		if err != nil {
			t.Fatalf("valid legacy start, then %q: %v", data, err)
		}
		if !rec.Legacy || len(rec.Samples) < 2 || rec.Samples[0].V[1] != 25 || rec.Samples[1].T != 0.1 || rec.Samples[1].V[1] != 50 {
			t.Fatalf("lost legacy rows (appended %q): %+v", data, rec.Samples)
		}
	})
}
