package profile

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeKernel is the kernel as a test says it is: where each page is, each
// thread's affinity, each process's maps. Pages it does not know are not
// present; processes it does not know have no maps.
type fakeKernel struct {
	nodes    map[pageKey]int
	affinity map[[2]int32]string
	maps     map[int32]string
	// frames, for the pagemap fallback: a page's frame and each frame's
	// node and huge-page flag (root's view); nil: frames hidden.
	frames     map[pageKey]uint64
	frameNodes map[uint64]int
	thp        map[uint64]bool
	// queries counts the pages asked of PageNodes.
	queries int
	// gone are the processes that have exited: nothing is known of them.
	gone map[int32]bool
	// frameDelay is how long each PageFrame takes (a contended mmap
	// lock); frameReads counts them.
	frameDelay time.Duration
	frameReads int
}

// useFakeKernel gives a a fake kernel that knows nothing yet.
func useFakeKernel(a *analyzer) *fakeKernel {
	k := &fakeKernel{nodes: map[pageKey]int{}, affinity: map[[2]int32]string{}, maps: map[int32]string{}}
	a.setKernel(k)
	return k
}

// fakeOf returns the fake kernel useFakeKernel gave a.
func fakeOf(t *testing.T, a *analyzer) *fakeKernel {
	t.Helper()
	k, ok := a.kern.(*fakeKernel)
	if !ok {
		t.Fatal("the analyzer has no fake kernel (useFakeKernel)")
	}
	return k
}

// setAffinity sets a thread's Cpus_allowed_list.
func (k *fakeKernel) setAffinity(pid, tid int, cpus string) {
	k.affinity[[2]int32{int32(pid), int32(tid)}] = cpus
}

func (k *fakeKernel) PageNodes(pid int32, pages []uint64, status []int32) bool {
	k.queries += len(pages)
	if k.gone[pid] {
		return false
	}
	for i, p := range pages {
		status[i] = -int32(unix.ENOENT)
		if n, ok := k.nodes[pageKey{pid, p}]; ok {
			status[i] = int32(n)
		}
	}
	return true
}

func (k *fakeKernel) PageFrame(pid int32, page uint64) (uint64, bool) {
	k.frameReads++
	time.Sleep(k.frameDelay)
	if k.gone[pid] {
		return 0, false
	}
	f, ok := k.frames[pageKey{pid, page}]
	return f, ok
}

func (k *fakeKernel) PagemapNode(pid int32, page uint64) int {
	pfn, ok := k.PageFrame(pid, page)
	if !ok {
		return -1
	}
	if n, ok := k.frameNodes[pfn]; ok {
		return n
	}
	return -1
}

func (k *fakeKernel) FrameTHP(pfn uint64) (huge, known bool) {
	if k.thp == nil {
		return false, false
	}
	return k.thp[pfn], true
}

func (k *fakeKernel) ExactTHP() bool { return k.thp != nil }

func (k *fakeKernel) Affinity(pid, tid int32) (string, bool) {
	s, ok := k.affinity[[2]int32{pid, tid}]
	return s, ok
}

func (k *fakeKernel) Maps(pid int32) ([]byte, bool) {
	s, ok := k.maps[pid]
	return []byte(s), ok
}

func (k *fakeKernel) Comm(pid int32) (string, bool) { return "", false }

func (k *fakeKernel) Close() {}
