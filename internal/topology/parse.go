package topology

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/sysfs"
)

// The parsers in this file are pure functions over file contents so that they
// can be fuzzed and tested without a tree. They are forgiving in the same way
// as the kernel's readers of these files: unknown lines are skipped, and an
// error reports the first line that could not be understood while the values
// that could be read are still returned, because a half-readable file is
// better than no information at all.

// parseMeminfo parses /proc/meminfo and /sys/devices/system/node/nodeN/meminfo.
// The per-node form prefixes every line with "Node N ". Values with a "kB"
// unit are converted to bytes (the kernel's kB is 1024 bytes); unit-less
// values (page counts such as HugePages_Total) are returned as read.
func parseMeminfo(data []byte) (map[string]uint64, error) {
	out := make(map[string]uint64)
	var firstErr error
	sc := bufio.NewScanner(bytes.NewReader(sysfs.Clean(data)))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(strings.TrimRight(sc.Text(), "\x00"))
		if s == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(s, "Node "); ok {
			// "Node 0 MemTotal: ..." -> drop the node number.
			_, after, found := strings.Cut(rest, " ")
			if !found {
				if firstErr == nil {
					firstErr = fmt.Errorf("line %d: %q has no key", line, truncate(s, 60))
				}
				continue
			}
			s = strings.TrimSpace(after)
		}
		key, val, ok := strings.Cut(s, ":")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			if firstErr == nil {
				firstErr = fmt.Errorf("line %d: %q is not \"Key: value\"", line, truncate(s, 60))
			}
			continue
		}
		fields := strings.Fields(val)
		if len(fields) == 0 || len(fields) > 2 {
			if firstErr == nil {
				firstErr = fmt.Errorf("line %d: %q has no single value", line, truncate(s, 60))
			}
			continue
		}
		v, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("line %d: %s value %q is not a number", line, key, truncate(fields[0], 30))
			}
			continue
		}
		if len(fields) == 2 {
			if !strings.EqualFold(fields[1], "kB") {
				if firstErr == nil {
					firstErr = fmt.Errorf("line %d: %s has unknown unit %q", line, key, truncate(fields[1], 10))
				}
				continue
			}
			if v > (1<<64-1)/1024 {
				if firstErr == nil {
					firstErr = fmt.Errorf("line %d: %s value %d kB overflows", line, key, v)
				}
				continue
			}
			v *= 1024
		}
		out[key] = v
	}
	if err := sc.Err(); err != nil && firstErr == nil {
		firstErr = err
	}
	return out, firstErr
}

// mount is one line of /proc/mounts (the fstab format).
type mount struct {
	Device, Dir, Type string
	Options           []string
}

// hasOption reports whether the mount carries the option name (without "=value").
func (m mount) hasOption(name string) bool {
	for _, o := range m.Options {
		if k, _, _ := strings.Cut(o, "="); k == name {
			return true
		}
	}
	return false
}

// parseMounts parses /proc/mounts (or /proc/self/mounts). Mount points with
// spaces are octal-escaped by the kernel ("\040"); they are unescaped here so
// the directory can be opened. Lines with fewer than four fields are skipped
// and reported through the error.
func parseMounts(data []byte) ([]mount, error) {
	var out []mount
	var firstErr error
	for i, l := range strings.Split(string(sysfs.Clean(data)), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if len(f) < 4 {
			if firstErr == nil {
				firstErr = fmt.Errorf("line %d: %q has fewer than 4 fields", i+1, truncate(l, 60))
			}
			continue
		}
		out = append(out, mount{
			Device:  unescapeMount(f[0]),
			Dir:     unescapeMount(f[1]),
			Type:    f[2],
			Options: strings.Split(f[3], ","),
		})
	}
	return out, firstErr
}

// unescapeMount undoes the kernel's octal escaping of space, tab, newline and
// backslash in /proc/mounts fields.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] >= '0' && s[i+1] <= '3' && isOctal(s[i+2]) && isOctal(s[i+3]) {
			v := (s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0')
			b.WriteByte(v)
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// cgroupEntry is one line of /proc/PID/cgroup: "ID:controllers:path". For
// cgroup v2 the ID is 0 and the controller list is empty.
type cgroupEntry struct {
	ID          int
	Controllers []string
	Path        string
}

// parseCgroup parses /proc/PID/cgroup. The path may itself contain colons, so
// each line is split into at most three fields.
func parseCgroup(data []byte) ([]cgroupEntry, error) {
	var out []cgroupEntry
	var firstErr error
	// Only NULs and line ends are trimmed: a cgroup path may end in a space,
	// but never holds a NUL.
	for i, l := range strings.Split(strings.TrimRight(string(data), "\x00\n"), "\n") {
		l = strings.TrimRight(l, "\x00")
		if strings.TrimSpace(l) == "" {
			continue
		}
		f := strings.SplitN(l, ":", 3)
		if len(f) != 3 {
			if firstErr == nil {
				firstErr = fmt.Errorf("line %d: %q is not ID:controllers:path", i+1, truncate(l, 60))
			}
			continue
		}
		id, err := strconv.Atoi(f[0])
		if err != nil || id < 0 {
			if firstErr == nil {
				firstErr = fmt.Errorf("line %d: hierarchy ID %q is not a number", i+1, truncate(f[0], 20))
			}
			continue
		}
		var ctrls []string
		if f[1] != "" {
			ctrls = strings.Split(f[1], ",")
		}
		out = append(out, cgroupEntry{ID: id, Controllers: ctrls, Path: f[2]})
	}
	return out, firstErr
}

// parseCacheSize parses a cache size file ("32K", "8192K", "1M"), returning bytes.
// A bare number is taken as bytes.
func parseCacheSize(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	mult := uint64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cache size %q is not a number with an optional K/M/G suffix", truncate(s, 30))
	}
	if v > (1<<64-1)/mult {
		return 0, fmt.Errorf("cache size %q overflows", truncate(s, 30))
	}
	return v * mult, nil
}

// parseInts parses whitespace-separated decimal integers (a node's distance file).
func parseInts(s string) ([]int, error) {
	f := strings.Fields(s)
	out := make([]int, 0, len(f))
	for _, x := range f {
		v, err := strconv.Atoi(x)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", truncate(x, 20))
		}
		out = append(out, v)
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
