package vmtest

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// topCgroupCPUScript starts `numascope top --cgroup` at 1 s, and after its
// first frame puts four burn processes (internal/top/testdata/burn.c) in a
// new cgroup /cpuw: 4, 1.5, 1.5 and 1.5 s of CPU, then each waits. The
// cgroup's cpu.stat (the kernel's own account of its tasks' run time) is
// read before they start and once all four have printed that they are
// done; top is stopped two frames later. Nothing in /cpuw runs outside
// that window, and every process of it is still there at the last frame.
const topCgroupCPUScript = `mkdir -p /sys/fs/cgroup/cpuw
numascope top -b --format json -d 1s -n 60 --cgroup --no-events >/tmp/top.json 2>/tmp/top.err &
T=$!
i=0; while [ ! -s /tmp/top.json ]; do sleep 0.05; i=$((i+1)); [ $i -gt 600 ] && break; done
sleep 0.3
sec before sh -c 'wc -l </tmp/top.json; cat /sys/fs/cgroup/cpuw/cpu.stat'
sh -c 'echo $$ > /sys/fs/cgroup/cpuw/cgroup.procs; burn 4000 & burn 1500 & burn 1500 & exec burn 1500' >/tmp/burn.out 2>&1 &
B=$!
i=0; while [ "$(grep -c ^done /tmp/burn.out)" -lt 4 ]; do sleep 0.1; i=$((i+1)); [ $i -gt 1200 ] && break; done
sec after sh -c 'wc -l </tmp/top.json; cat /sys/fs/cgroup/cpuw/cpu.stat'
n=$(wc -l </tmp/top.json)
i=0; while [ "$(wc -l </tmp/top.json)" -lt $((n+2)) ]; do sleep 0.1; i=$((i+1)); [ $i -gt 300 ] && break; done
kill $T; wait $T
sec burn cat /tmp/burn.out
sec procs cat /sys/fs/cgroup/cpuw/cgroup.procs
sec frames cat /tmp/top.json
sec stderr cat /tmp/top.err
kill $(cat /sys/fs/cgroup/cpuw/cgroup.procs)
`

// TestTopCgroupCPUVM holds top's per-cgroup CPU% to the kernel's own
// account of the cgroup's CPU time, cpu.stat's usage_usec, which shares
// nothing with the /proc/PID/stat ticks top sums (topCgroupCPUScript).
// Summed over the frames, CPU% times each frame's interval is the CPU time
// top saw the cgroup's processes spend; it must match usage_usec's growth
// over the window in which they ran (docs/fidelity.md).
//
// Tolerance, 0.25 s of about 8.5 s (3%): each process's ticks are
// truncated to 10 ms at the last read and may lag its run time by a
// scheduler tick (4 processes x 20 ms); the shell that becomes the last
// burner ran a few milliseconds before it entered /cpuw, which its ticks
// count and cpu.stat does not. All four processes start within a frame's
// interval: a collector that counted a new process's time only from the
// first frame that saw it would miss about 0.5 s of each, 2 s in all.
func TestTopCgroupCPUVM(t *testing.T) {
	requireVM(t)
	burn := buildStaticC(t, filepath.Join("internal", "top", "testdata", "burn.c"), "burn", "-O2", "-Wall")
	r := runVM(t, []string{"--nodes", "2", "--cpus-per-node", "2", "--add", burn}, topCgroupCPUScript)
	if e := strings.TrimSpace(r.section(t, "stderr")); e != "" {
		t.Errorf("top wrote to stderr: %s", e)
	}
	burnOut := r.section(t, "burn")
	if n := strings.Count(burnOut, "done "); n != 4 {
		t.Fatalf("%d of the 4 burn processes finished:\n%s", n, burnOut)
	}
	if n := len(strings.Fields(r.section(t, "procs"))); n != 4 {
		t.Fatalf("/cpuw holds %d processes at the end, want the 4 burners: %s", n, r.section(t, "procs"))
	}
	// read returns how many frames top had written and the cgroup's CPU
	// time in seconds at a read of cpu.stat.
	read := func(name string) (int, float64) {
		text := r.section(t, name)
		lines := strings.SplitN(text, "\n", 2)
		n, err := strconv.Atoi(strings.TrimSpace(lines[0]))
		m := regexp.MustCompile(`(?m)^usage_usec (\d+)`).FindStringSubmatch(text)
		if err != nil || m == nil {
			t.Fatalf("%s: no frame count or no usage_usec in cpu.stat:\n%s", name, text)
		}
		us, _ := strconv.ParseFloat(m[1], 64)
		return n, us / 1e6
	}
	n0, u0 := read("before")
	n1, u1 := read("after")
	ref := u1 - u0

	// The window: a frame before the burners started, two after they
	// were done.
	frames := topFrames(t, r.section(t, "frames"))
	if n0 < 1 || len(frames) < n1+2 {
		t.Fatalf("top's frames do not cover the burners' run: %d written before, %d when all were done, %d in all", n0, n1, len(frames))
	}
	var got float64
	var per []string
	for _, f := range frames[1:] {
		g := cgroupOf(&f, "/cpuw")
		if g == nil {
			per = append(per, "-")
			continue
		}
		got += g.CPUPercent / 100 * f.Interval
		per = append(per, fmt.Sprintf("%.0f%%", g.CPUPercent))
	}
	t.Logf("/cpuw: top %.3f s of CPU (frames: %s), cpu.stat usage_usec grew by %.3f s; burn: %s",
		got, strings.Join(per, " "), ref, strings.ReplaceAll(strings.TrimSpace(burnOut), "\n", "; "))
	if ref < 8 {
		t.Fatalf("cpu.stat: /cpuw used %.3f s, want at least the 8.5 s the burners spent", ref)
	}
	if d := got - ref; d < -0.25 || d > 0.25 {
		t.Errorf("top's /cpuw row adds up to %.3f s of CPU; the cgroup's cpu.stat says %.3f s (%+.3f s, tolerance 0.25 s)", got, ref, d)
	}
}
