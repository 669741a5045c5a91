package ctl

import (
	"bytes"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode"
)

// Reader is a process that holds the control FIFO open for reading: the
// numascope a command sent to it steers. numascope ctl names it, so that a
// command meant for one numascope and taken by another (the default FIFO
// is one per user, and one for all of root) does not go unnoticed.
type Reader struct {
	PID      int
	UID      int
	LoginUID int    // the login user (audit loginuid) of a process started with sudo; -1 when unset
	Command  string // its command line, arguments quoted where they need it
}

// String names the process for a message: PID, user and command line.
func (r Reader) String() string {
	s := fmt.Sprintf("PID %d (%s", r.PID, userName(r.UID))
	if r.LoginUID >= 0 && r.LoginUID != r.UID {
		s += ", logged in as " + userName(r.LoginUID)
	}
	return s + "): " + r.Command
}

func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return "uid " + strconv.Itoa(uid)
}

// procDir is where readers looks for processes; a variable for tests.
var procDir = "/proc"

// readers lists the processes other than this one that have the file
// dev:ino open for reading (O_RDONLY or O_RDWR), as far as /proc lets this
// process see: all of them for root, this user's otherwise, which are the
// only ones that can open an owner-only FIFO of this user.
func readers(dev, ino uint64) []Reader {
	pids, _ := os.ReadDir(procDir)
	self := os.Getpid()
	var out []Reader
	for _, p := range pids {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		fdDir := filepath.Join(procDir, p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or another user's
		}
		for _, fd := range fds {
			link := filepath.Join(fdDir, fd.Name())
			if target, err := os.Readlink(link); err != nil || !strings.HasPrefix(target, "/") || strings.HasPrefix(target, "/dev/") {
				continue // sockets, pipes, anonymous inodes, devices: not a FIFO on a file system
			}
			var st syscall.Stat_t
			if syscall.Stat(link, &st) != nil || uint64(st.Dev) != dev || st.Ino != ino || !openForReading(pid, fd.Name()) {
				continue
			}
			if r, ok := readProcess(pid); ok {
				out = append(out, r)
			}
			break
		}
	}
	return out
}

// openForReading reports whether fd of pid was opened O_RDONLY or O_RDWR,
// from the octal flags in /proc/PID/fdinfo/FD.
func openForReading(pid int, fd string) bool {
	b, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "fdinfo", fd))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err == nil && flags&syscall.O_ACCMODE != syscall.O_WRONLY
		}
	}
	return false
}

// readProcess reads pid's owner, login user and command line.
func readProcess(pid int) (Reader, bool) {
	dir := filepath.Join(procDir, strconv.Itoa(pid))
	var st syscall.Stat_t
	if syscall.Stat(dir, &st) != nil {
		return Reader{}, false
	}
	r := Reader{PID: pid, UID: int(st.Uid), LoginUID: -1}
	if b, err := os.ReadFile(filepath.Join(dir, "loginuid")); err == nil {
		// 4294967295 is (uid_t)-1: no login user (a daemon, a container).
		if v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32); err == nil && v != 1<<32-1 {
			r.LoginUID = int(v)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
	var args []string
	for _, a := range bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0}) {
		args = append(args, shellWord(string(a)))
	}
	r.Command = strings.Join(args, " ")
	if len(r.Command) > 200 {
		r.Command = r.Command[:200] + "..."
	}
	if r.Command == "" {
		r.Command = "(command line unknown)"
	}
	return r, true
}

// shellWord quotes an argument the way a user would type it, and escapes
// anything unprintable so that no command line of another process puts an
// escape sequence on the terminal.
func shellWord(a string) string {
	plain := a != ""
	for _, r := range a {
		if !unicode.IsPrint(r) {
			return strconv.Quote(a)
		}
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./=:,+%@", r)) {
			plain = false
		}
	}
	if plain {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}
