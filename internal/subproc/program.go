package subproc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Program is an executable opened once and executed by descriptor
// (`/proc/self/fd/N` in the child), never again by its path: replacing the
// file at that path afterwards (a binary built into a writable root, renamed
// over by a command) changes nothing about what runs.
type Program struct {
	f    *os.File
	path string
}

// OpenProgram opens the executable at path for execution by descriptor.
// Errors: path cannot be opened, or is not a regular file with an execute
// bit set.
func OpenProgram(path string) (*Program, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		_ = f.Close()
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0 {
		_ = f.Close()
		return nil, fmt.Errorf("%s is not an executable regular file", path)
	}
	return &Program{f: f, path: filepath.Clean(path)}, nil
}

// Path is the path the program was opened from, for messages only.
func (p *Program) Path() string { return p.path }

// Owner returns the uid owning the opened file and whether anyone but its
// owner may write it (group or other write bits).
func (p *Program) Owner() (uid int, othersWrite bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(p.f.Fd()), &st); err != nil {
		return 0, false, err
	}
	return int(st.Uid), st.Mode&0o022 != 0, nil
}

// execPath is the path a child that holds the program at descriptor fd
// executes.
func execPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }
