package profile

// Where a faulting thread's memory came from: the allocation site
// (allocTracker) and the Mapping (mappingTracker) of the page it faulted,
// one answer from both, kept for the run of faults it holds for.

// memoryOrigin answers where memory came from, from the allocation and
// mapping trackers it reads (the analyzer's own) and the code index the
// allocation tracker looks up forked processes' parents in.
type memoryOrigin struct {
	al   *allocTracker
	mp   *mappingTracker
	code *codeIndex
}

// memoryAnswer is memoryOf's last answer for a thread: the allocation site
// and Mapping of pid's addresses [lo, hi) while the trackers' generations
// are alGen and mpGen, and in round only unless it is 0.
type memoryAnswer struct {
	pid           int32
	site, mapping uint32
	lo, hi        uint64
	alGen, mpGen  uint64
	round         uint64
}

// memoryOf returns the allocation site and the Mapping of the page at addr
// of pid (page: its page address), in the analyzer's round; m is the
// faulting thread's last answer, which kern, when asked, may add
// /proc/PID/maps to. Pages of a thread's stack (an mmap with MAP_STACK) are
// in the stack mapping, which /proc/PID/maps cannot tell from other
// anonymous memory. The answer is kept in m for the addresses where both
// trackers' answers hold, until either changes: a thread faults in runs
// through one range, and a storm's threads take turns, each in its own.
func (o *memoryOrigin) memoryOf(m *memoryAnswer, kern kernel, round uint64, pid int32, addr, page uint64) (site, mapping uint32) {
	alGen, mpGen := o.al.generation(), o.mp.generation()
	if m.pid == pid && addr >= m.lo && addr < m.hi && m.alGen == alGen && m.mpGen == mpGen &&
		(m.round == 0 || m.round == round) {
		return m.site, m.mapping
	}
	site, lo, hi := o.al.span(pid, addr, o.code)
	idx, mlo, mhi, thisRound := o.mp.of(kern, round, pid, page)
	mapping = idx
	if site != 0 && o.al.kind(site) == "stack" && o.mp.kind(idx) == "anon" {
		mapping = o.mp.index(mapKey{kind: "stack"})
	}
	*m = memoryAnswer{pid: pid, lo: max(lo, mlo), hi: min(hi, mhi), alGen: alGen, mpGen: mpGen, site: site, mapping: mapping}
	if thisRound { // in no known range: maps is read again next round
		m.round = round
	}
	return site, mapping
}
