package topology

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/numascope/numascope/internal/procnuma"
	"github.com/numascope/numascope/internal/sysfs"
)

// allowed finds the CPUs and nodes this process may use.
//
// On a running kernel /proc/self/status answers directly (Cpus_allowed_list,
// Mems_allowed_list); it folds in the cpuset, the cgroup and the affinity mask
// the process inherited, which is exactly "what may I run on". Captured trees
// and some restricted /proc mounts lack it, so the cpuset is then resolved the
// way the kernel exposes it: the process's cpuset path (/proc/self/cpuset, or
// /proc/self/cgroup), a mount of the cpuset hierarchy from /proc/mounts, and
// the cpus/mems files of that cgroup. nil sets mean "not found".
func (d *discoverer) allowed() (cpus, mems []int, source string) {
	status := d.fs.Proc("self/status")
	if s, ok := d.read(status); ok {
		kv := statusFields([]byte(s))
		c, cok := d.statusSet(status, kv, "Cpus_allowed_list", "Cpus_allowed")
		m, mok := d.statusSet(status, kv, "Mems_allowed_list", "Mems_allowed")
		if cok || mok {
			if cok && c == nil {
				c = []int{}
			}
			if mok && m == nil {
				m = []int{}
			}
			return c, m, status
		}
	}
	return d.cgroupAllowed()
}

// statusFields gathers the "Key:\tvalue" pairs of /proc/self/status through
// procnuma's parser (the one parser of that file), each value trimmed; the
// caller parses the values it needs. The pairs before an overlong line are
// kept: a captured tree may be damaged, and the sets are checked anyway.
func statusFields(data []byte) map[string]string {
	out := make(map[string]string)
	procnuma.StatusFields(data, func(_ int, k, v []byte) error {
		out[string(k)] = strings.Trim(string(v), " \t\r\n\v\f\x00")
		return nil
	})
	return out
}

// statusSet parses one set from /proc/self/status, preferring the list form
// and falling back to the mask form that kernels before 2.6.26 had alone.
func (d *discoverer) statusSet(path string, kv map[string]string, listKey, maskKey string) ([]int, bool) {
	if v, ok := kv[listKey]; ok {
		set, err := sysfs.ParseCPUList(v)
		if err == nil {
			return set, true
		}
		d.warnf("%s: %s: %v; ignored", path, listKey, err)
	}
	if v, ok := kv[maskKey]; ok {
		set, err := sysfs.ParseCPUMask(v)
		if err == nil {
			return set, true
		}
		d.warnf("%s: %s: %v; ignored", path, maskKey, err)
	}
	return nil, false
}

// cgroupAllowed resolves the cpuset of the process through the cgroup
// filesystems. Three kinds of mount can hold it:
//
//   - the legacy "cpuset" filesystem (files cpus and mems),
//   - cgroup v1 with the cpuset controller (files cpuset.cpus and
//     cpuset.mems, or cpus and mems with the noprefix option that emulates
//     the legacy filesystem),
//   - cgroup v2 with the cpuset controller enabled (cpuset.cpus.effective and
//     cpuset.mems.effective, which exist only in cgroups where the controller
//     is enabled, so the nearest ancestor that has them applies).
//
// The first mount in /proc/mounts order that yields both files wins; the
// cpuset controller can be bound to only one hierarchy, so at most one of
// them is really in charge. cgroup v1 reads cpuset.cpus rather than
// cpuset.effective_cpus: outside the cpuset_v2_mode option they are equal
// except for transient hotplug states, and cpuset.cpus is what older kernels
// and hwloc read.
func (d *discoverer) cgroupAllowed() (cpus, mems []int, source string) {
	var cpusetPath string
	if s, ok := d.read(d.fs.Proc("self/cpuset")); ok {
		cpusetPath, _, _ = strings.Cut(s, "\n")
		cpusetPath = strings.TrimSpace(cpusetPath)
	}
	var v1Path, v2Path string
	if s, ok := d.read(d.fs.Proc("self/cgroup")); ok {
		entries, err := parseCgroup([]byte(s))
		if err != nil {
			d.warnf("%s: %v; the rest of the file is used", d.fs.Proc("self/cgroup"), err)
		}
		for _, e := range entries {
			if slices.Contains(e.Controllers, "cpuset") {
				v1Path = e.Path
			}
			if e.ID == 0 && len(e.Controllers) == 0 {
				v2Path = e.Path
			}
		}
	}
	if v1Path == "" {
		v1Path = cpusetPath
	}
	if v2Path == "" {
		v2Path = cpusetPath
	}

	mountsPath := d.fs.Proc("mounts")
	s, ok := d.read(mountsPath)
	if !ok {
		mountsPath = d.fs.Proc("self/mounts")
		s, ok = d.read(mountsPath)
	}
	var mounts []mount
	if ok {
		var err error
		mounts, err = parseMounts([]byte(s))
		if err != nil {
			d.warnf("%s: %v; the rest of the file is used", mountsPath, err)
		}
	} else {
		// No mount table: try where systemd and the distributions mount them.
		mounts = []mount{
			{Dir: "/sys/fs/cgroup", Type: "cgroup2"},
			{Dir: "/sys/fs/cgroup/cpuset", Type: "cgroup", Options: []string{"cpuset"}},
		}
	}

	for _, m := range mounts {
		var cpusFile, memsFile, path string
		switch {
		case m.Type == "cpuset":
			cpusFile, memsFile, path = "cpus", "mems", cpusetPath
		case m.Type == "cgroup" && m.hasOption("cpuset"):
			cpusFile, memsFile, path = "cpuset.cpus", "cpuset.mems", v1Path
			if m.hasOption("noprefix") {
				cpusFile, memsFile = "cpus", "mems"
			}
		case m.Type == "cgroup2":
			// Skip hierarchies whose root says the cpuset controller is not
			// available (hybrid v1/v2 systems mount a controller-less v2).
			if ctrls, ok := d.read(filepath.Join(d.fs.Path(m.Dir), "cgroup.controllers")); ok &&
				!slices.Contains(strings.Fields(ctrls), "cpuset") {
				continue
			}
			cpusFile, memsFile, path = "cpuset.cpus.effective", "cpuset.mems.effective", v2Path
		default:
			continue
		}
		if path == "" || !safeCgroupPath(path) {
			continue
		}
		dir := d.nearestWith(d.fs.Path(m.Dir), path, cpusFile, m.Type == "cgroup2")
		if dir == "" {
			continue
		}
		c, cok := d.readSet(dir, cpusFile)
		mm, mok := d.readSet(dir, memsFile)
		if !cok || !mok {
			continue
		}
		return nonNil(c), nonNil(mm), dir
	}
	return nil, nil, ""
}

// nearestWith returns mnt+path if it holds file, or with walkUp the nearest
// ancestor (up to the mount root) that does; "" when none does.
func (d *discoverer) nearestWith(mnt, path, file string, walkUp bool) string {
	p := filepath.Clean("/" + path)
	for {
		dir := filepath.Join(mnt, p)
		if _, err := os.Stat(filepath.Join(dir, file)); err == nil {
			return dir
		}
		if !walkUp || p == "/" {
			return ""
		}
		p = filepath.Dir(p)
	}
}

// safeCgroupPath rejects cgroup paths that would climb out of the mount
// point: they come from files of a possibly hostile captured tree.
func safeCgroupPath(p string) bool {
	return !slices.Contains(strings.Split(p, "/"), "..")
}
