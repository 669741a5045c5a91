package profile

// From records to the batch: each record the rings give is decoded
// (package perfring) and either applied at once (mappings, names, exits,
// losses) or queued, with its time, for handling in time order.

import (
	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/perfring"
)

// ringRecord handles one record as a ring gives it.
func (a *analyzer) ringRecord(r *perfring.Record) { a.record(r.Raw) }

// record handles one perf record. Samples are buffered for handleBatch;
// the rest (rare) are applied at once.
func (a *analyzer) record(rec []byte) {
	switch perfring.Type(rec) {
	case unix.PERF_RECORD_SAMPLE:
		s := &a.dec.sample
		if !perfring.DecodeSample(rec, s) {
			return
		}
		if s.Raw != nil {
			a.syscallSample(s)
			return
		}
		a.samples++
		a.batch.add(a.calls.fault(s))
	case unix.PERF_RECORD_MMAP2:
		m := &a.dec.mmap
		if !perfring.DecodeMmap2(rec, m) || m.Prot&unix.PROT_EXEC == 0 {
			return
		}
		a.code.addMapping(m.PID, mapping{start: m.Start, end: m.Start + m.Len, pgoff: m.Pgoff, file: string(m.File)})
	case unix.PERF_RECORD_COMM:
		c := &a.dec.comm
		if !perfring.DecodeComm(rec, c) {
			return
		}
		t := a.thread(c.PID, c.TID)
		if string(c.Name) != t.comm {
			t.comm = string(c.Name)
		}
		if c.Exec {
			// An exec: the process's old pages are gone. Forget them in
			// time order, among the samples.
			a.batch.add(rawSample{kind: evExec, time: c.Time, pid: c.PID, tid: c.TID})
		}
	case unix.PERF_RECORD_FORK:
		f := &a.dec.task
		if !perfring.DecodeTask(rec, f) {
			return
		}
		if f.PID != f.PPID {
			// A new process starts with its parent's mappings. They are
			// looked up in the parent at symbolization time rather than
			// copied now, since records from other CPUs' rings (the
			// parent's last mmaps) may not have been read yet.
			a.code.setParent(f.PID, f.PPID)
			a.al.forked() // where allocation sites are looked up for it
		}
		t := a.thread(f.PID, f.TID)
		if p, ok := a.th.known(f.PTID); ok && t.comm == "" {
			t.comm = p.comm // a new thread or process has its parent's name until it execs
		}
		// Its affinity is its parent's at that moment: set in time order.
		a.batch.add(rawSample{kind: evFork, time: f.Time, pid: f.PID, tid: f.TID, a0: uint64(f.PTID)})
	case unix.PERF_RECORD_EXIT:
		e := &a.dec.task
		if !perfring.DecodeTask(rec, e) {
			return
		}
		a.th.exited(e.TID)
		a.calls.exited(e.TID)
	case unix.PERF_RECORD_LOST:
		if n, ok := perfring.DecodeLost(rec); ok {
			a.lost += n
			// An munmap may have been among them: no page known until
			// now can be trusted to be the same memory (handleFault).
			a.lossEpoch++
		}
	}
}

// decoded holds the analyzer's decoded records, reused from one record to
// the next so that decoding allocates nothing.
type decoded struct {
	sample perfring.Sample
	mmap   perfring.Mmap2
	comm   perfring.Comm
	task   perfring.Task
}
