package sampler

import "time"

// nextRecord waits up to d for the sink's next record: nil and !open once
// the queue is closed and drained, nil and open on timeout.
func nextRecord(k *Sink, d time.Duration) (r *Record, open bool) {
	timeout := time.After(d)
	for {
		if r, open = k.Next(); r != nil || !open {
			return r, open
		}
		select {
		case <-k.Ready():
		case <-timeout:
			return nil, true
		}
	}
}
