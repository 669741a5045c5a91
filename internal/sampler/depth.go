package sampler

import "time"

// SinkDepth is the depth of a sink that may fall two seconds behind at
// interval (plus room for a burst), bounded to 64..65536 samples: enough for
// a consumer that stalls on a slow disk or a busy hub, without a pool of
// hundreds of thousands of records at a 100 µs interval. The recorder's
// sink and live's sink both use it, so that they drop samples alike.
func SinkDepth(interval time.Duration) int {
	if interval <= 0 {
		return 1 << 16
	}
	return min(max(int(2*time.Second/interval)+16, 64), 1<<16)
}
