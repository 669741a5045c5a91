package profile

// The header of a record capture (Options.Capture): what the analyzer knew
// before the first record, so that a replay of the records (the tests and
// benchmarks of the consumer) starts where the run did.

import (
	"encoding/json"
	"io"

	"github.com/numascope/numascope/internal/perfevent"
	"github.com/numascope/numascope/internal/perfring"
)

// captureMeta is the header of a record capture: what the analyzer knew
// before the first record, so that a replay starts where the run did.
type captureMeta struct {
	PID         int32  `json:"pid"`
	Comm        string `json:"comm"`
	Maps        string `json:"maps"`
	Affinity    string `json:"affinity"`
	CPUNode     []int  `json:"cpu_node"`
	PageNodes   []int  `json:"page_nodes"`
	ThreadNodes []int  `json:"thread_nodes"`
	Hinting     bool   `json:"hinting"`
	THPOff      bool   `json:"thp_off"`
	PageSize    uint64 `json:"page_size"`
	// Syscalls are the syscall tracepoints opened: their ids and field
	// offsets are this kernel's, and the raw records hold them.
	Syscalls []capturedSyscall `json:"syscalls"`
}

// capturedSyscall is a syscall tracepoint as opened.
type capturedSyscall struct {
	Name       string                `json:"name"`
	Tracepoint *perfevent.Tracepoint `json:"tracepoint"`
}

// startCapture writes a capture's header for the stopped process pid.
func startCapture(w io.Writer, a *analyzer, pid int) (*perfring.CaptureWriter, error) {
	m := captureMeta{PID: int32(pid), CPUNode: a.cpuNode, PageNodes: a.pageNodes, ThreadNodes: a.threadNodes,
		Hinting: a.hinting, THPOff: !a.thp.on(), PageSize: a.pageSize}
	if maps, ok := a.kern.Maps(int32(pid)); ok {
		m.Maps = string(maps)
	}
	m.Comm, _ = a.kern.Comm(int32(pid))
	m.Affinity, _ = a.kern.Affinity(int32(pid), int32(pid))
	for _, oe := range a.syscalls {
		m.Syscalls = append(m.Syscalls, capturedSyscall{Name: oe.ev.name, Tracepoint: oe.tp})
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return perfring.NewCaptureWriter(w, b), nil
}
