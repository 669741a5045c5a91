package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/numascope/numascope/internal/topology"
)

// maxResultFile bounds a bench JSON read back: a 64-node machine's result
// with every sample is a few MiB.
const maxResultFile = 256 << 20

// LoadResult reads a result written by bench --format json. Only the
// matrices matter to its readers (topology --format hwloc-xml --bench), so
// a file without any is refused with a one-line error saying what to give.
func LoadResult(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench result: %w", err)
	}
	defer f.Close()
	var res Result
	dec := json.NewDecoder(io.LimitReader(f, maxResultFile))
	if err := dec.Decode(&res); err != nil {
		return nil, fmt.Errorf("bench result %s is not the JSON of numascope bench --format json: %v", path, err)
	}
	if res.Latency == nil && res.Bandwidth == nil {
		return nil, fmt.Errorf("bench result %s has neither latency_ns nor bandwidth_mbs: give the output of numascope bench --format json", path)
	}
	for _, m := range []*Matrix{res.Latency, res.Bandwidth} {
		if m == nil {
			continue
		}
		if err := m.check(); err != nil {
			return nil, fmt.Errorf("bench result %s: %v", path, err)
		}
	}
	return &res, nil
}

// check verifies that the matrix has one row per initiator and one column
// per target, so that indexing it cannot go out of range.
func (m *Matrix) check() error {
	if len(m.Matrix) != len(m.Initiators) {
		return fmt.Errorf("matrix has %d rows for %d initiators", len(m.Matrix), len(m.Initiators))
	}
	for _, row := range m.Matrix {
		if len(row) != len(m.Targets) {
			return fmt.Errorf("matrix row has %d values for %d targets", len(row), len(m.Targets))
		}
	}
	return nil
}

// MemAttrs turns the measured matrices into hwloc memory attributes:
// Latency in nanoseconds (the median, rounded) and Bandwidth in MiB/s (the
// best, converted from MB/s), from each initiator node's CPUs to each
// target. Pairs not measured are left out.
func (r *Result) MemAttrs() ([]topology.MemAttr, error) {
	var out []topology.MemAttr
	add := func(m *Matrix, name string, scale float64) error {
		if m == nil {
			return nil
		}
		if err := m.check(); err != nil {
			return err
		}
		for i, from := range m.Initiators {
			for j, to := range m.Targets {
				v := m.Matrix[i][j]
				if v == nil {
					continue
				}
				x := math.Round(*v * scale)
				if math.IsNaN(x) || x < 0 || x > math.MaxInt64 {
					return fmt.Errorf("%s from node %d to node %d is %v, not a measurement", name, from, to, *v)
				}
				out = append(out, topology.MemAttr{Name: name, Initiator: from, Target: to, Value: uint64(x)})
			}
		}
		return nil
	}
	if err := add(r.Latency, "Latency", 1); err != nil {
		return nil, err
	}
	if err := add(r.Bandwidth, "Bandwidth", 1/mibToMB); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("the bench result has no measured pair")
	}
	return out, nil
}
