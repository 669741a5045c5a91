package numatrace

import (
	"encoding/binary"
	"os"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/perfring"
)

func readFormat(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// vmDecoder is a decoder of the VM kernel's formats (testdata), with the
// event ids of one ring.
func vmDecoder(t testing.TB) (*decoder, *events) {
	t.Helper()
	fl, err := parseFaultFormat(readFormat(t, "deb6.1-kprobe-task_numa_fault.format"))
	if err != nil {
		t.Fatal(err)
	}
	ml, err := parseMigrateFormat(readFormat(t, "deb6.1-mm_migrate_pages.format"))
	if err != nil {
		t.Fatal(err)
	}
	evs := &events{}
	evs.add(11, kindFault)
	evs.add(12, kindMigrate)
	evs.add(13, kindLocalDRAM)
	evs.add(14, kindRemoteDRAM)
	return newDecoder(fl, ml), evs
}

func TestParseFormats(t *testing.T) {
	fl, err := parseFaultFormat(readFormat(t, "deb6.1-kprobe-task_numa_fault.format"))
	if err != nil {
		t.Fatal(err)
	}
	// The kernel printed "mem_node=%d pages=%d flags=%u" from these.
	want := faultLayout{node: field{16, 4, true}, pages: field{20, 4, true}, flags: field{24, 4, false}}
	if fl != want {
		t.Errorf("kprobe layout %+v, want %+v", fl, want)
	}
	for _, c := range []struct {
		file     string
		reason   field
		n        int
		lastName string
	}{
		{"deb6.1-mm_migrate_pages.format", field{52, 4, true}, 9, "demotion"},
		{"6.18-mm_migrate_pages.format", field{60, 4, true}, 10, "damon"},
	} {
		ml, err := parseMigrateFormat(readFormat(t, c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if ml.succeeded != (field{8, 8, false}) || ml.reason != c.reason {
			t.Errorf("%s: succeeded %+v reason %+v", c.file, ml.succeeded, ml.reason)
		}
		if len(ml.names) != c.n || ml.names[int64(c.n-1)] != c.lastName || ml.names[0] != "compaction" || ml.misplaced != 5 {
			t.Errorf("%s: reasons %v, numa_misplaced %d", c.file, ml.names, ml.misplaced)
		}
	}
	// The mode list precedes the reason list and must not be taken for it.
	if names := parseSymbolic(readFormat(t, "deb6.1-mm_migrate_pages.format"), "mode"); !reflect.DeepEqual(names,
		map[int64]string{0: "MIGRATE_ASYNC", 1: "MIGRATE_SYNC_LIGHT", 2: "MIGRATE_SYNC"}) {
		t.Errorf("mode names %v", names)
	}
}

func TestParseSymbolic(t *testing.T) {
	for _, c := range []struct {
		fmt  string
		want map[int64]string
	}{
		{`print fmt: "%d", REC->reason`, map[int64]string{}},
		{`__print_symbolic(REC->reason, {0, "a"}, {MR_X, "b"}, {0x2, "c"}, {3, d}, {4, "e"})`, map[int64]string{0: "a", 2: "c", 4: "e"}},
		{`__print_symbolic(REC->reason, {0, "a"`, map[int64]string{}},
		{`__print_symbolic(REC->reason, {1,"x"}`, map[int64]string{1: "x"}},
	} {
		if got := parseSymbolic(c.fmt, "reason"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %v, want %v", c.fmt, got, c.want)
		}
	}
	// Without a list, reasons are shown as numbers.
	d := newDecoder(faultLayout{}, migrateLayout{misplaced: -1})
	if d.reasonNames[5] != "5" {
		t.Errorf("reason 5 without names: %q", d.reasonNames[5])
	}
}

// The builders write records as the kernel does, at the offsets of the
// captured format files.

func sampleHeader(id uint64, pid, tid int32, raw []byte) []byte {
	rec := make([]byte, 24)
	binary.LittleEndian.PutUint32(rec[0:], unix.PERF_RECORD_SAMPLE)
	binary.LittleEndian.PutUint64(rec[8:], id)
	binary.LittleEndian.PutUint32(rec[16:], uint32(pid))
	binary.LittleEndian.PutUint32(rec[20:], uint32(tid))
	if raw != nil {
		// RAW: a u32 size, then the data padded so that the record stays
		// 8-byte aligned.
		size := (len(raw)+4+7)/8*8 - 4
		rec = binary.LittleEndian.AppendUint32(rec, uint32(size))
		rec = append(rec, raw...)
		rec = append(rec, make([]byte, size-len(raw))...)
	}
	binary.LittleEndian.PutUint16(rec[6:], uint16(len(rec)))
	return rec
}

func put(raw []byte, f field, v int64) {
	switch f.size {
	case 4:
		binary.LittleEndian.PutUint32(raw[f.off:], uint32(v))
	case 8:
		binary.LittleEndian.PutUint64(raw[f.off:], uint64(v))
	}
}

func faultRecord(d *decoder, pid, tid int32, node, pages int32, flags uint32) []byte {
	raw := make([]byte, 28) // the kprobe's entry: common fields, __probe_ip, 3 × 4 bytes
	put(raw, d.fault.node, int64(node))
	put(raw, d.fault.pages, int64(pages))
	put(raw, d.fault.flags, int64(flags))
	return sampleHeader(11, pid, tid, raw)
}

func migrateRecord(d *decoder, pid int32, succeeded uint64, reason int32) []byte {
	raw := make([]byte, 56)
	put(raw, d.migrate.succeeded, int64(succeeded))
	put(raw, d.migrate.reason, int64(reason))
	return sampleHeader(12, pid, pid, raw)
}

func lostRecord(n uint64) []byte {
	rec := make([]byte, 24)
	binary.LittleEndian.PutUint32(rec[0:], unix.PERF_RECORD_LOST)
	binary.LittleEndian.PutUint16(rec[6:], 24)
	binary.LittleEndian.PutUint64(rec[16:], n)
	return rec
}

// TestDecode feeds the records of the VM's trace (firsttouch, serial init:
// "mem_node=1 pages=1 flags=8", "mem_node=2 pages=1 flags=1",
// "nr_succeeded=1 ... reason=numa_misplaced") and checks every count.
func TestDecode(t *testing.T) {
	d, evs := vmDecoder(t)
	c := NewCounts()
	const pid = 145
	recs := [][]byte{
		faultRecord(d, pid, 146, 1, 1, tnfFaultLocal),             // local, node 1
		migrateRecord(d, pid, 1, 5),                               // numa_misplaced, in thread 147
		faultRecord(d, pid, 147, 2, 1, tnfMigrated),               // remote, migrated to node 2
		faultRecord(d, pid, 145, 0, 512, tnfFaultLocal|tnfShared), // a local huge page
		faultRecord(d, pid, 148, 0, 1, tnfMigrateFail|tnfNoGroup), // remote, migration failed
		faultRecord(d, 900, 900, 3, 1, 0),                         // another process
		migrateRecord(d, 77, 10, 0),                               // compaction in kcompactd
		migrateRecord(d, 77, 3, 40),                               // a reason the format does not name
		migrateRecord(d, 77, 2, 9),                                // one the 6.1 list lacks (damon since 6.8)
		sampleHeader(13, pid, 146, nil),                           // PMU local
		sampleHeader(14, pid, 147, nil),                           // PMU remote
		sampleHeader(14, pid, 147, nil),                           // PMU remote
		lostRecord(7),                                             // the kernel dropped 7
		sampleHeader(99, pid, 146, nil),                           // an id of no event: malformed
		faultRecord(d, pid, 146, 1, 1, tnfFaultLocal)[:30],        // cut: malformed
	}
	// The cut record's header still says its full length; decode sees the slice.
	for _, r := range recs {
		d.record(r, evs, c)
	}
	d.flush(c)
	p := c.Procs[pid]
	if p == nil {
		t.Fatal("no counts for the process")
	}
	want := Faults{Local: 2, Remote: 2, LocalPages: 513, RemotePages: 2, MigratedPages: 1, MigrateFailed: 1}
	if p.Faults != want {
		t.Errorf("process faults %+v, want %+v", p.Faults, want)
	}
	if len(p.ByNode) != 3 || p.ByNode[0] != (Faults{Local: 1, Remote: 1, LocalPages: 512, RemotePages: 1, MigrateFailed: 1}) ||
		p.ByNode[1] != (Faults{Local: 1, LocalPages: 1}) || p.ByNode[2] != (Faults{Remote: 1, RemotePages: 1, MigratedPages: 1}) {
		t.Errorf("process by node %+v", p.ByNode)
	}
	if p.MisplacedPages != 1 || p.LocalDRAM != 1 || p.RemoteDRAM != 2 {
		t.Errorf("process misplaced %d, DRAM %d/%d", p.MisplacedPages, p.LocalDRAM, p.RemoteDRAM)
	}
	if th := c.Threads[147]; th == nil || th.TGID != pid || th.Remote != 1 || th.MigratedPages != 1 || th.RemoteDRAM != 2 {
		t.Errorf("thread 147: %+v", th)
	}
	if th := c.Threads[145]; th == nil || th.Local != 1 || th.LocalPages != 512 {
		t.Errorf("thread 145: %+v", th)
	}
	if len(c.Nodes) != 4 || c.Nodes[3].Remote != 1 || c.Nodes[0].Local != 1 || c.Nodes[0].Remote != 1 {
		t.Errorf("nodes %+v", c.Nodes)
	}
	if other, ok := c.Procs[77]; ok {
		t.Errorf("kcompactd: %+v; compaction is not numa_misplaced, and no process is made for it", other)
	}
	wantReasons := map[string]uint64{"numa_misplaced": 1, "compaction": 10, "40": 3, "9": 2}
	if !reflect.DeepEqual(c.MigratedByReason, wantReasons) {
		t.Errorf("migrated by reason %v, want %v", c.MigratedByReason, wantReasons)
	}
	if c.Lost != 7 || c.Malformed != 2 || c.Samples != 12 {
		t.Errorf("lost %d, malformed %d, samples %d", c.Lost, c.Malformed, c.Samples)
	}

	// Reset: the active entries stay, zeroed; those idle over an interval
	// go.
	c.Reset()
	if len(c.Procs) != 2 || c.Procs[pid].Local != 0 || len(c.Procs[pid].ByNode) != 3 || c.Lost != 0 || c.MigratedByReason["compaction"] != 0 {
		t.Errorf("after Reset: %d processes, %+v", len(c.Procs), c.Procs[pid])
	}
	d.record(faultRecord(d, pid, 146, 1, 1, tnfFaultLocal), evs, c)
	c.Reset()
	if len(c.Procs) != 1 || c.Procs[pid] == nil || len(c.Threads) != 1 || c.Threads[146] == nil {
		t.Errorf("after a second Reset: processes %v, threads %v", c.Procs, c.Threads)
	}
	c.Reset()
	if len(c.Procs) != 0 || len(c.Threads) != 0 || len(c.freeProcs) != 2 {
		t.Errorf("after an idle interval: processes %v, threads %v, %d kept for reuse", c.Procs, c.Threads, len(c.freeProcs))
	}
}

// TestDecodeDoesNotAllocate: a sample of a process, thread and node seen
// before allocates nothing, nor does draining it through Collect's handler.
func TestDecodeDoesNotAllocate(t *testing.T) {
	d, evs := vmDecoder(t)
	c := NewCounts()
	recs := [][]byte{faultRecord(d, 10, 11, 3, 1, tnfMigrated), migrateRecord(d, 10, 1, 5),
		sampleHeader(14, 10, 11, nil), lostRecord(1)}
	for _, r := range recs {
		d.record(r, evs, c)
	}
	d.flush(c)
	tr := &Tracer{dec: d, cur: c, curEvs: evs}
	tr.handler = tr.handle
	var rr perfring.Record
	if n := testing.AllocsPerRun(1000, func() {
		for _, r := range recs {
			rr.Raw = r
			tr.handler(&rr)
		}
		d.flush(c)
	}); n != 0 {
		t.Errorf("%.1f allocations per round of records", n)
	}
}

func BenchmarkDecodeFault(b *testing.B) {
	d, evs := vmDecoder(b)
	c := NewCounts()
	rec := faultRecord(d, 10, 11, 3, 1, tnfFaultLocal)
	b.ReportAllocs()
	for b.Loop() {
		d.record(rec, evs, c)
	}
}

// FuzzRecord: any record decodes without a panic, counts as one sample,
// one malformed record, lost records or nothing (other record types), and
// its faults stay within what one record can say.
func FuzzRecord(f *testing.F) {
	d, evs := vmDecoder(f)
	f.Add(faultRecord(d, 1, 2, 3, 1, 9))
	f.Add(migrateRecord(d, 1, 5, 5))
	f.Add(sampleHeader(13, 1, 1, nil))
	f.Add(lostRecord(3))
	f.Add([]byte{9, 0, 0, 0, 0, 0, 8, 0})
	f.Fuzz(func(t *testing.T, rec []byte) {
		d, evs := vmDecoder(t)
		c := NewCounts()
		d.record(rec, evs, c)
		d.flush(c)
		if c.Samples+c.Malformed > 1 {
			t.Fatalf("one record counted %d times", c.Samples+c.Malformed)
		}
		var faults uint64
		for _, p := range c.Procs {
			faults += p.Local + p.Remote
		}
		if faults > 1 || len(c.Nodes) > maxNodes || len(c.Procs) > 1 || len(c.Threads) > 1 {
			t.Fatalf("one record made %d faults, %d nodes, %d processes, %d threads", faults, len(c.Nodes), len(c.Procs), len(c.Threads))
		}
	})
	_ = evs
}
