package subproc

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

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

// Sealed returns a copy of p in a sealed memory file (memfd: no write,
// grow or shrink ever again), run by descriptor: rewriting the file p was
// opened from in place afterwards (a binary inside a writable root,
// overwritten by a command) changes nothing about what the copy runs. The
// copy is read through p's descriptor, so replacing the file by rename
// (as the file tools do) before the copy is made changes nothing either. It
// costs the binary's size in memory. Errors: the kernel refuses a memfd, or
// reading p fails.
func (p *Program) Sealed() (*Program, error) {
	return sealedCopy(p.path, func(dst *os.File) error { return copyFile(dst, p.f) })
}

// SealedProgram returns the executable image b (a program embedded in
// this one: internal/helperbin) in a sealed memory file, run by descriptor
// like Sealed's copy; name is for messages. It costs len(b) in memory.
// Errors: the kernel refuses a memfd, or writing it fails.
func SealedProgram(name string, b []byte) (*Program, error) {
	return sealedCopy(name, func(dst *os.File) error {
		_, err := dst.Write(b)
		return err
	})
}

// sealedCopy makes a memory file, fills it with fill, makes it executable
// and seals it; what names the program copied, for messages.
func sealedCopy(what string, fill func(dst *os.File) error) (*Program, error) {
	fd, err := unix.MemfdCreate("harness", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		// Before Linux 6.3 there is no MFD_EXEC: memory files are
		// executable.
		fd, err = unix.MemfdCreate("harness", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("copy %s to a sealed memory file: %w", what, err)
	}
	dst := os.NewFile(uintptr(fd), "harness")
	fail := func(err error) (*Program, error) {
		_ = dst.Close()
		return nil, fmt.Errorf("copy %s to a sealed memory file: %w", what, err)
	}
	if err := fill(dst); err != nil {
		return fail(err)
	}
	if err := unix.Fchmod(fd, 0o555); err != nil {
		return fail(err)
	}
	if err := seal(fd); err != nil {
		return fail(err)
	}
	return &Program{f: dst, path: what}, nil
}

// copyFile copies src, from its start to its end, to dst inside the kernel
// (sendfile: the bytes never pass through this process's memory; the 39 MB
// harness binary in 15 ms against 21 ms through a 32 KiB buffer, most of
// either the memory file's new pages, and far less CPU than the buffer
// under the race detector, which checks each buffer); where the kernel
// refuses sendfile between the two (EINVAL, ENOSYS) before the first byte,
// through a buffer. src is read from offset 0 whatever its position.
func copyFile(dst, src *os.File) error {
	var off int64
	for {
		n, err := unix.Sendfile(int(dst.Fd()), int(src.Fd()), &off, 1<<30)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS)) && off == 0:
			_, err = io.Copy(dst, io.NewSectionReader(src, 0, math.MaxInt64))
			return err
		case err != nil:
			return err
		case n == 0:
			return nil
		}
	}
}

// seal seals the memory file fd against any change: its content, its
// size, and, from Linux 6.3, its mode (F_SEAL_EXEC: under --exec local a
// command could otherwise chmod the copy through /proc/PID/exe and make
// every later command fail to start). The kernel refuses F_SEAL_WRITE with
// EBUSY while a page of the file still has a reference it cannot account
// for, which a page just written can keep for a moment on a busy machine
// (it waits in another CPU's LRU batch); seal tries again for up to a
// second before it gives up.
func seal(fd int) error {
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	deadline := time.Now().Add(time.Second)
	exec := unix.F_SEAL_EXEC
	for {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals|exec)
		if errors.Is(err, unix.EINVAL) && exec != 0 {
			exec = 0 // before Linux 6.3
			continue
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
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
