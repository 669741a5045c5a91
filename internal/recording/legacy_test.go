package recording

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The fixtures follow the original NUMAscope's writer (record.go): see
// legacy.go. testdata/legacy-numaconnect2.json is a clean recording in the
// later layout ([sensor, sources, rate], headings, rows, "]");
// testdata/legacy-vmstat-interrupted.json is an interrupted one in the
// earlier layout ([sensor, heading...]), cut off inside its last row.

func TestLegacyNumaConnect2(t *testing.T) {
	rec, err := Load("testdata/legacy-numaconnect2.json")
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Legacy || rec.Header.Version != 0 || rec.Header.Format != "numascope" {
		t.Errorf("Legacy %v, header %+v", rec.Legacy, rec.Header)
	}
	if want := time.UnixMicro(1561449935018346).UTC(); !rec.Header.Start.Equal(want) {
		t.Errorf("Start = %v, want %v", rec.Header.Start, want)
	}
	if rec.Header.Interval != 0.100013 { // median of 100044, 100012, 100013 µs
		t.Errorf("Interval = %v", rec.Header.Interval)
	}
	wantSensors := []SensorInfo{{Name: "numaconnect2", Present: true, Sources: []string{"0", "1"}}}
	if !reflect.DeepEqual(rec.Header.Sensors, wantSensors) {
		t.Errorf("sensors = %+v", rec.Header.Sensors)
	}
	wantCols := []Column{
		{Name: "numaconnect2.0.RdBlkMod_commands_sent", Sensor: "numaconnect2", Event: "RdBlkMod_commands_sent", Sources: []string{"0"}, Kind: Counter, Desc: "RdBlkMod commands sent"},
		{Name: "numaconnect2.1.RdBlkMod_commands_sent", Sensor: "numaconnect2", Event: "RdBlkMod_commands_sent", Sources: []string{"1"}, Kind: Counter, Desc: "RdBlkMod commands sent"},
		{Name: "numaconnect2.0.wait_cycles_for_requests_from_PIU_to_RMPE", Sensor: "numaconnect2", Event: "wait_cycles_for_requests_from_PIU_to_RMPE", Sources: []string{"0"}, Unit: "%", Kind: Counter, Desc: "% wait cycles for requests from PIU to RMPE", Max: 100},
		{Name: "numaconnect2.1.wait_cycles_for_requests_from_PIU_to_RMPE", Sensor: "numaconnect2", Event: "wait_cycles_for_requests_from_PIU_to_RMPE", Sources: []string{"1"}, Unit: "%", Kind: Counter, Desc: "% wait cycles for requests from PIU to RMPE", Max: 100},
	}
	if !reflect.DeepEqual(rec.Columns, wantCols) {
		t.Errorf("columns =\n%+v\nwant\n%+v", rec.Columns, wantCols)
	}
	if !reflect.DeepEqual(rec.Header.Columns, wantCols) {
		t.Errorf("header columns differ from columns")
	}
	// "%" columns: value / (rate/100) with rate 200000000.
	checkSamples(t, rec.Samples, []Sample{
		{0, []float64{1520, 1498, 25, 6}},
		{0.100044, []float64{1610, 1502, 26, 5.5}},
		{0.200056, []float64{25000, 24010, 90, 1.5}},
		{0.300069, []float64{24800, 23950, 95, 1}},
	})
	if want := []Mark{{Type: MarkLabel, T: 0.131654, Text: "phase 2"}}; !reflect.DeepEqual(rec.Marks, want) {
		t.Errorf("marks = %+v", rec.Marks)
	}
	if rec.End == nil || rec.End.Samples != 4 || len(rec.Skipped) != 0 {
		t.Errorf("clean legacy file: end %+v, skipped %q", rec.End, rec.Skipped)
	}
}

func TestLegacyInterrupted(t *testing.T) {
	rec, err := Load("testdata/legacy-vmstat-interrupted.json")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range rec.Columns {
		names = append(names, c.Name)
		if c.Unit != "" || c.Kind != Counter || !reflect.DeepEqual(c.Sources, []string{""}) {
			t.Errorf("column %+v", c)
		}
	}
	if want := "kernel_vmstat.numa_hit kernel_vmstat.numa_miss kernel_vmstat.pgfault"; strings.Join(names, " ") != want {
		t.Errorf("names = %v", names)
	}
	checkSamples(t, rec.Samples, []Sample{
		{0, []float64{30211, 0, 5120}},
		{0.10012, []float64{29870, 12, 4980}},
		{0.20023, []float64{310522, 4, 98311}},
	})
	if len(rec.Marks) != 1 || rec.Marks[0].T != 0.15 || rec.Marks[0].Text != "start" {
		t.Errorf("marks = %+v", rec.Marks)
	}
	if rec.End != nil {
		t.Error("interrupted legacy recording has an End")
	}
	if len(rec.Skipped) != 1 || !strings.HasPrefix(rec.Skipped[0], "line 7: cut off mid-row") {
		t.Errorf("Skipped = %q", rec.Skipped)
	}
}

// Legacy times may also be relative (microseconds since the start), as the
// format is sometimes described; rows may be corrupt; files may be
// reformatted onto one line.
func TestLegacyVariants(t *testing.T) {
	in := `[["UNC",1,0],["UNC0 IOA SCI Intr", "% busy", "dup", "dup"],` +
		"\n[0,1,50,1,2],\n[100000,2,60,3,4],\n[200000,x,1],\n[\"pause\",300000],\n[300000,3,70,5],\n[400000,4,80,6,7]]\n"
	rec, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Header.Start.IsZero() || rec.Header.Interval != 0.1 {
		t.Errorf("relative times: start %v, interval %v", rec.Header.Start, rec.Header.Interval)
	}
	var names []string
	for _, c := range rec.Columns {
		names = append(names, c.Name)
	}
	if want := "unc.UNC0_IOA_SCI_Intr unc.busy unc.dup unc.dup_2"; strings.Join(names, " ") != want {
		t.Errorf("names = %q", names)
	}
	// Rate 0: a "%" column cannot be converted and stays raw.
	if c := rec.Columns[1]; c.Unit != "" || !strings.Contains(c.Desc, "raw rate") {
		t.Errorf("unconvertible %% column = %+v", c)
	}
	checkSamples(t, rec.Samples, []Sample{{0, []float64{1, 50, 1, 2}}, {0.1, []float64{2, 60, 3, 4}}, {0.4, []float64{4, 80, 6, 7}}})
	want := []string{
		"line 4: not valid JSON",
		`line 5: unknown row type "pause"; skipped`,
		"line 6: sample has 3 values but there are 4 headings; skipped",
	}
	if len(rec.Skipped) != len(want) {
		t.Fatalf("Skipped = %q", rec.Skipped)
	}
	for i := range want {
		if !strings.HasPrefix(rec.Skipped[i], want[i]) {
			t.Errorf("Skipped[%d] = %q, want %q", i, rec.Skipped[i], want[i])
		}
	}
	if rec.End == nil {
		t.Error("closed legacy array without End")
	}
}

func TestLegacyErrors(t *testing.T) {
	for in, want := range map[string]string{
		`[["NumaConnect2",2,2`:                  "cut off before its column headings",
		`[["NumaConnect2",2,200000000],` + "\n": "cut off before its column headings",
		`[[1,2,3],["a"]]`:                       "does not start with the sensor name",
		`[["x",1,1],[1,2]]`:                     "not the list of column headings",
		`[{"a":1}]`:                             "is not [sensor, sources, rate]",
		`[]`:                                    "has no column headings",
	} {
		_, err := Read(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", in, err, want)
		}
	}
}

// convert: a legacy recording re-encoded in the current format reads back
// the same.
func TestLegacyEncode(t *testing.T) {
	rec, err := Load("testdata/legacy-numaconnect2.json")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "converted.jsonl.zst")
	w, err := Create(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Encode(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(*rec.End); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Legacy || back.Header.Version != Version || !back.Header.Start.Equal(rec.Header.Start) ||
		back.Header.Interval != rec.Header.Interval || !reflect.DeepEqual(back.Columns, rec.Columns) ||
		!reflect.DeepEqual(back.Marks, rec.Marks) || *back.End != *rec.End || len(back.Skipped) != 0 {
		t.Errorf("converted recording differs:\n%+v\n%+v", back, rec)
	}
	checkSamples(t, back.Samples, rec.Samples)
	raw, _ := os.ReadFile(path)
	if !bytes.HasPrefix(raw, zstdMagic) {
		t.Error("converted .zst file is not compressed")
	}
}
