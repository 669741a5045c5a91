// Package sysfs locates the kernel's pseudo-filesystems (/sys and /proc) under a
// configurable root and parses the small text formats they use.
//
// Every reader in numascope goes through an FS so that the whole tool can run
// against a captured tree (--root DIR or NUMASCOPE_ROOT) exactly as it runs on
// the live machine. The parsers are deliberately forgiving about the quirks real
// kernels produce: trailing NUL bytes, missing trailing newlines, padding.
package sysfs

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// FS is a root under which sys/ and proc/ are found. The zero value is the live system.
type FS struct {
	root string
}

// New returns an FS rooted at dir. An empty dir or "/" means the live system.
func New(dir string) FS {
	if dir == "/" {
		dir = ""
	}
	return FS{root: dir}
}

// Live reports whether f reads the running kernel rather than a captured tree.
func (f FS) Live() bool { return f.root == "" }

// Sys joins elem under the sys directory, e.g. Sys("devices/system/node").
func (f FS) Sys(elem ...string) string {
	return filepath.Join(append([]string{f.root, "/sys"}, elem...)...)
}

// Proc joins elem under the proc directory, e.g. Proc("self/status").
func (f FS) Proc(elem ...string) string {
	return filepath.Join(append([]string{f.root, "/proc"}, elem...)...)
}

// Path rebases an absolute path of the live system (such as a mount point read
// from /proc/mounts) under the root.
func (f FS) Path(abs string) string {
	return filepath.Join(f.root, abs)
}

// Clean trims what real sysfs and procfs files carry around a value: trailing
// NUL bytes, newlines and spaces.
func Clean(b []byte) []byte {
	return bytes.TrimRight(bytes.TrimSpace(b), "\x00\n\r\t ")
}

// ReadString reads a small file and returns its cleaned content. A FIFO or
// socket in its place is an error (ReadFile), never a hang.
func ReadString(path string) (string, error) {
	b, err := ReadFile(path)
	if err != nil {
		return "", err
	}
	return string(Clean(b)), nil
}

// ReadInt reads a file holding one decimal integer.
func ReadInt(path string) (int64, error) {
	s, err := ReadString(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: not an integer: %q", path, truncate(s, 40))
	}
	return v, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// ParseCPUList parses the kernel's list format ("0-3,8,10-11", also used for
// node lists). An empty string is an empty list. The result is sorted and
// duplicate-free.
func ParseCPUList(s string) ([]int, error) {
	s = string(Clean([]byte(s)))
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad cpu list %q: %q is not a number", truncate(s, 60), lo)
		}
		b := a
		if isRange {
			// Ranges may carry a stride ("0-15:2") on newer kernels' boot parameters; sysfs does not emit it.
			b, err = strconv.Atoi(hi)
			if err != nil || b < a {
				return nil, fmt.Errorf("bad cpu list %q: bad range %q", truncate(s, 60), part)
			}
		}
		if b-a > 1<<20 {
			return nil, fmt.Errorf("bad cpu list %q: range %q is too large", truncate(s, 60), part)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// ParseCPUMask parses the kernel's hex mask format ("00000000,0000000f"),
// where the rightmost word holds CPUs 0-31.
func ParseCPUMask(s string) ([]int, error) {
	s = string(Clean([]byte(s)))
	if s == "" {
		return nil, nil
	}
	words := strings.Split(s, ",")
	var out []int
	for i := len(words) - 1; i >= 0; i-- {
		w := strings.TrimPrefix(strings.TrimSpace(words[i]), "0x")
		if w == "" {
			continue
		}
		v, err := strconv.ParseUint(w, 16, 64)
		if err != nil {
			return nil, fmt.Errorf("bad cpu mask %q: word %q is not hex", truncate(s, 60), w)
		}
		bits := 4 * len(w)
		if bits > 64 {
			return nil, fmt.Errorf("bad cpu mask %q: word %q is too long", truncate(s, 60), w)
		}
		base := 32 * (len(words) - 1 - i)
		for b := 0; b < bits; b++ {
			if v&(1<<uint(b)) != 0 {
				out = append(out, base+b)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// FormatCPUList renders a sorted list in the kernel's compact list format.
func FormatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}
