package top

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/testutil"
)

// TestPagesMigratedWhenAThreadExits: without an event source a process's
// pages migrated per second come from its threads' cumulative
// numa_pages_migrated (/proc/PID/task/TID/sched). On the 4-node VM's
// capture (internal/procnuma/testdata/vm4-init: threads 139 and 156-159,
// three of them at 8 193), worker 157 exits and 139 migrates 40 pages
// between two refreshes: the interval's 40, not the fall of the threads'
// sum by 8 153 (which showed no figure), nor 40 less the exited thread's
// count. A thread that appears counts all of its count, since it started
// within the interval (its starttime after the first refresh's boot
// clock): the third refresh, with thread 160 new at 25, reads 25.
func TestPagesMigratedWhenAThreadExits(t *testing.T) {
	root := testutil.CopyTree(t, filepath.Join("..", "procnuma", "testdata", "vm4-init"))
	task := filepath.Join(root, "proc", "139", "task")
	// The capture holds /proc only: the 4 nodes of one CPU each it was
	// taken on.
	sys := filepath.Join(root, "sys", "devices", "system")
	for name, v := range map[string]string{"cpu/online": "0-3", "cpu/possible": "0-3", "cpu/present": "0-3",
		"node/online": "0-3", "node/possible": "0-3", "node/has_cpu": "0-3", "node/has_memory": "0-3",
		"node/node0/cpulist": "0", "node/node1/cpulist": "1", "node/node2/cpulist": "2", "node/node3/cpulist": "3"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(sys, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sys, name), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setMigrated := func(tid string, v string) {
		t.Helper()
		p := filepath.Join(task, tid, "sched")
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(`(?m)^(numa_pages_migrated\s+:\s+)\d+$`)
		if !re.Match(data) {
			t.Fatalf("%s has no numa_pages_migrated line", p)
		}
		if err := os.WriteFile(p, re.ReplaceAll(data, []byte("${1}"+v)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := NewCollector(sysfs.New(root), Options{Detailed: 5, MapsEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	migrated := func(frame string) *float64 {
		t.Helper()
		f, err := c.Refresh()
		if err != nil {
			t.Fatal(err)
		}
		p := find(f, 139)
		if p == nil {
			t.Fatalf("%s: no process 139", frame)
		}
		if p.PagesMigrated == nil {
			return nil
		}
		v := *p.PagesMigrated * f.Interval
		return &v
	}
	if m := migrated("first"); m != nil {
		t.Errorf("first refresh: %v pages migrated, want none (no earlier reading)", *m)
	}
	if err := os.RemoveAll(filepath.Join(task, "157")); err != nil {
		t.Fatal(err)
	}
	setMigrated("139", "51")
	time.Sleep(100 * time.Millisecond)
	if m := migrated("second"); m == nil || *m < 39.5 || *m > 40.5 {
		t.Errorf("second refresh, thread 157 gone: pages migrated in the interval %v, want 40", m)
	}

	// Thread 160, started now (156's files, its starttime this boot
	// clock), with 25 pages migrated.
	if err := os.CopyFS(filepath.Join(task, "160"), os.DirFS(filepath.Join(task, "156"))); err != nil {
		t.Fatal(err)
	}
	stat, err := os.ReadFile(filepath.Join(task, "160", "stat"))
	if err != nil {
		t.Fatal(err)
	}
	cut := bytes.LastIndexByte(stat, ')') + 1
	fields := strings.Fields(string(stat[cut:]))
	fields[22-3] = strconv.FormatUint(bootTicks(), 10) // field 22, starttime; fields[0] is field 3
	stat = append(stat[:cut:cut], " "+strings.Join(fields, " ")+"\n"...)
	if err := os.WriteFile(filepath.Join(task, "160", "stat"), stat, 0o644); err != nil {
		t.Fatal(err)
	}
	setMigrated("160", "25")
	time.Sleep(100 * time.Millisecond)
	if m := migrated("third"); m == nil || *m < 24.5 || *m > 25.5 {
		t.Errorf("third refresh, thread 160 new: pages migrated in the interval %v, want its 25", m)
	}
}
