package recording

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"syscall"
	"testing"
)

// headerLine is a valid header with two columns a.x and a.y.
const headerLine = `{"type":"header","format":"numascope","version":1,"host":"h","kernel":"k","start":"2025-01-02T03:04:05Z","interval_s":0.5,"sensors":[{"name":"a","present":true,"reason":"","sources":[""]}],"columns":[{"name":"a.x","sensor":"a","event":"x","sources":[""],"unit":"","kind":"counter","desc":""},{"name":"a.y","sensor":"a","event":"y","sources":[""],"unit":"","kind":"gauge","desc":""}]}`

func TestCorruptMiddleLines(t *testing.T) {
	in := strings.Join([]string{
		headerLine,
		`[0.5,1,2]`,
		`[1.0,3,4`,                              // 3: cut, then the writer went on (disk full, then space freed)
		`garbage`,                               // 4
		`[1.5,5,6,7]`,                           // 5: too many values
		`[2,7,8]`,                               // 6: fine
		`{"type":"label","t":"x","text":"bad"}`, // 7: t not a number
		`{"type":"label","text":"no time"}`,     // 8
		`{"type":"label","t":2.2,"text":"ok"}`,  // 9
		`[2.5,01,2]`,                            // 10: not JSON (leading zero)
		`[2.5,NaN,2]`,                           // 11: not JSON
		`[null,1,2]`,                            // 12: null time
		`{"type":"header","format":"numascope","version":1}`, // 13: second header
		`{"t":3}`,        // 14: no type
		"\x00\xff\xfe",   // 15: binary junk
		`[3, 9 , -1e3 ]`, // 16: spaces are fine
		``,               // blank lines are not skipped lines
		`{"type":"end","t":3,"samples":4,"missed_deadlines":0,"dropped":0}`,
	}, "\n") + "\n"
	rec, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	checkSamples(t, rec.Samples, []Sample{{0.5, []float64{1, 2}}, {2, []float64{7, 8}}, {3, []float64{9, -1000}}})
	if len(rec.Marks) != 1 || rec.Marks[0].Text != "ok" {
		t.Errorf("marks = %+v", rec.Marks)
	}
	if rec.End == nil || rec.End.Samples != 4 {
		t.Errorf("end = %+v", rec.End)
	}
	wantLines := []string{"line 3:", "line 4:", "line 5:", "line 7:", "line 8:", "line 10:", "line 11:", "line 12:", "line 13:", "line 14:", "line 15:"}
	if len(rec.Skipped) != len(wantLines) {
		t.Fatalf("Skipped = %q", rec.Skipped)
	}
	for i, w := range wantLines {
		if !strings.HasPrefix(rec.Skipped[i], w) || !strings.HasSuffix(rec.Skipped[i], "; skipped") {
			t.Errorf("Skipped[%d] = %q, want prefix %q", i, rec.Skipped[i], w)
		}
	}
	for i, w := range map[int]string{2: "3 values but the column set has 2", 4: "without \"t\"", 8: "a second header", 3: `corrupt "label" line`} {
		if !strings.Contains(rec.Skipped[i], w) {
			t.Errorf("Skipped[%d] = %q, want %q", i, rec.Skipped[i], w)
		}
	}
}

func TestUnknownTypes(t *testing.T) {
	in := headerLine + "\n" +
		`{"type":"gpu_power","t":0.1,"watts":[1,2]}` + "\n" +
		`[0.5,1,2]` + "\n" +
		`{"type":"label","t":0.6,"text":"x","colour":"red"}` + "\n" + // unknown field: kept
		`{"type":"thermal","t":0.7}` + "\n" +
		`[1,3,4]` + "\n"
	rec, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	checkSamples(t, rec.Samples, []Sample{{0.5, []float64{1, 2}}, {1, []float64{3, 4}}})
	if len(rec.Marks) != 1 || rec.Marks[0].Text != "x" {
		t.Errorf("marks = %+v", rec.Marks)
	}
	want := []string{
		`line 2: unknown line type "gpu_power" (written by a newer numascope?); skipped`,
		`line 5: unknown line type "thermal" (written by a newer numascope?); skipped`,
	}
	if strings.Join(rec.Skipped, "\n") != strings.Join(want, "\n") {
		t.Errorf("Skipped = %q\nwant %q", rec.Skipped, want)
	}

	// The Decoder says what it skipped.
	d := NewDecoder(strings.NewReader(in))
	var kinds []string
	for {
		l, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, l.Kind.String()+":"+l.Type)
	}
	if got := strings.Join(kinds, " "); got != "header:header skipped:gpu_power sample: label:label skipped:thermal sample:" {
		t.Errorf("kinds = %s", got)
	}
}

func TestColumnsChange(t *testing.T) {
	in := headerLine + "\n" +
		`[1,10,20]` + "\n" +
		`{"type":"columns","t":1.5,"columns":[{"name":"a.z","sensor":"a","event":"z","sources":[""],"unit":"%","kind":"gauge","desc":"","max":100},{"name":"a.x","sensor":"a","event":"x","sources":[""],"unit":"","kind":"counter","desc":""}]}` + "\n" +
		`[2,50,11]` + "\n" +
		`{"type":"columns","t":2.5,"columns":[{"name":"a.y","sensor":"a","event":"y","sources":[""],"unit":"","kind":"gauge","desc":""}]}` + "\n" +
		`[3,22]` + "\n" +
		`[3.5,22,1]` + "\n" // wrong width for the current set
	rec, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range rec.Columns {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "a.x,a.y,a.z" {
		t.Errorf("union = %v", names)
	}
	n := math.NaN()
	checkSamples(t, rec.Samples, []Sample{{1, []float64{10, 20, n}}, {2, []float64{11, n, 50}}, {3, []float64{n, 22, n}}})
	if len(rec.Marks) != 2 || rec.Marks[0].Type != MarkColumns || rec.Marks[1].T != 2.5 {
		t.Errorf("marks = %+v", rec.Marks)
	}
	if len(rec.Skipped) != 1 || !strings.Contains(rec.Skipped[0], "line 7: sample has 2 values but the column set has 1") {
		t.Errorf("Skipped = %q", rec.Skipped)
	}
}

func TestHeaderErrors(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"empty", "", "the file is empty"},
		{"blank", "\n\n  \n", "the file is empty"},
		{"text", "hello\n", `starts with 'h'`},
		{"sample first", "[0.1,1,2]\n" + headerLine + "\n", "legacy"},
		{"label first", `{"type":"label","t":1,"text":"x"}` + "\n" + headerLine + "\n", `the first line is a "label" line`},
		{"corrupt", `{"type":"header","format":"numascope","version":1,"columns":[{]}` + "\n[1]\n", "the header line is corrupt"},
		{"cut", headerLine[:100], "the header line is cut off"},
		{"other format", `{"type":"header","format":"perfetto","version":1}` + "\n", `the header's format is "perfetto"`},
		{"newer", `{"type":"header","format":"numascope","version":2}` + "\n", "format version 2 is newer than this numascope reads (1); upgrade numascope"},
		{"zstd junk", "\x28\xb5\x2f\xfd\x00\x00\x00", "compressed data"},
		{"gzip", "\x1f\x8b\x08\x00", "gzip-compressed; decompress it first"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if c.name != "newer" && !errors.Is(err, ErrNoHeader) {
				t.Errorf("err %v does not wrap ErrNoHeader", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

// growingReader serves data up to a limit that the test raises, as a file
// being written does.
type growingReader struct {
	data  []byte
	limit int
	off   int
}

func (g *growingReader) Read(p []byte) (int, error) {
	if g.off >= g.limit {
		return 0, io.EOF
	}
	n := copy(p, g.data[g.off:g.limit])
	g.off += n
	return n, nil
}

// A Decoder follows a file being written: at the end of the data it returns
// io.EOF (or io.ErrUnexpectedEOF inside a line) and resumes when more comes.
func TestDecoderFollow(t *testing.T) {
	var buf bytes.Buffer
	writeTest(t, NewWriter(&buf, false))
	data := buf.Bytes()
	g := &growingReader{data: data}
	d := NewDecoder(g)
	var got []Line
	for limit := 0; limit <= len(data); limit += 7 {
		g.limit = limit
		for {
			l, err := d.Next()
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			if err != nil {
				t.Fatalf("at %d bytes: %v", limit, err)
			}
			got = append(got, l)
		}
	}
	g.limit = len(data)
	for {
		l, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	var kinds []string
	for i, l := range got {
		kinds = append(kinds, l.Kind.String())
		if l.No != i+1 {
			t.Errorf("line %d has No %d", i+1, l.No)
		}
	}
	want := "header sample label sample interval pause resume sample columns sample sample end"
	if s := strings.Join(kinds, " "); s != want {
		t.Fatalf("kinds = %s\nwant    %s", s, want)
	}
	if got[1].T != 0.1 || got[1].Values[1] != 2.5 || got[2].Text != "phase \"2\"\n<b>" || got[4].Interval != 0.001 || got[11].End.Dropped != 2 {
		t.Errorf("line contents wrong: %+v", got)
	}
}

// A line longer than the limit is skipped, not loaded into memory whole.
func TestOverlongLine(t *testing.T) {
	defer func(old int) { maxLine = old }(maxLine)
	maxLine = 1 << 20
	long := "[1," + strings.Repeat("1,", maxLine/2) + "1]"
	in := headerLine + "\n" + long + "\n[2,3,4]\n"
	rec, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	checkSamples(t, rec.Samples, []Sample{{2, []float64{3, 4}}})
	if len(rec.Skipped) != 1 || !strings.Contains(rec.Skipped[0], "line 2: longer than 1 MiB") {
		t.Errorf("Skipped = %q", rec.Skipped)
	}
}

func TestSkippedIsCapped(t *testing.T) {
	in := headerLine + "\n" + strings.Repeat("junk\n", 250) + "[1,2,3]\n"
	rec, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Samples) != 1 || len(rec.Skipped) != maxSkipped+1 || rec.Skipped[maxSkipped] != "150 more problems not listed" {
		t.Errorf("%d samples, %d skipped, last %q", len(rec.Samples), len(rec.Skipped), rec.Skipped[len(rec.Skipped)-1])
	}
}

// errReader returns its data, then an I/O error.
type errReader struct {
	data []byte
	err  error
}

func (e *errReader) Read(p []byte) (int, error) {
	if len(e.data) == 0 {
		return 0, e.err
	}
	n := copy(p, e.data)
	e.data = e.data[n:]
	return n, nil
}

// A read error after the header keeps what was read and says so.
func TestReadErrorKeepsData(t *testing.T) {
	in := headerLine + "\n[1,2,3]\n[2,4"
	rec, err := Read(&errReader{[]byte(in), syscall.EIO})
	if err != nil {
		t.Fatal(err)
	}
	checkSamples(t, rec.Samples, []Sample{{1, []float64{2, 3}}})
	if len(rec.Skipped) != 1 || !strings.Contains(rec.Skipped[0], "line 3: read error (input/output error); the rest of the file was not read") {
		t.Errorf("Skipped = %q", rec.Skipped)
	}
	if _, err := Read(&errReader{[]byte(headerLine[:50]), syscall.EIO}); !errors.Is(err, syscall.EIO) {
		t.Errorf("read error inside the header: %v", err)
	}
}
