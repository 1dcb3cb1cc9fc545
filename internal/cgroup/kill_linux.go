package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// killAll kills every process in g and waits until none is left, at most
// timeout: through cgroup.kill when g has one (the kernel then also kills
// what is forked meanwhile), else by rounds of SIGKILL over cgroup.procs
// until they read empty (a process forked during a round is born in the
// group and found by the next one).
func killAll(g groupBackend, timeout time.Duration) error {
	files := g.procsFiles()
	pids, err := readProcs(files)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && allMissing(g.dirs()) {
			return nil // removed already
		}
		return err
	}
	if len(pids) == 0 {
		return nil
	}
	byKernel := false
	if f := g.killFile(); f != "" {
		err := os.WriteFile(f, []byte("1"), 0)
		switch {
		case err == nil:
			byKernel = true
		case errors.Is(err, os.ErrNotExist): // before Linux 5.14
		default:
			return fmt.Errorf("writing %s: %w", f, err)
		}
	}
	deadline := time.Now().Add(timeout)
	pause := 500 * time.Microsecond
	for {
		if !byKernel {
			signalAll(pids, files)
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
		if pids, err = readProcs(files); err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes still in the group %v after SIGKILL: %v", len(pids), timeout, pids)
		}
	}
}

// signalAll sends SIGKILL to those of pids that are still in the group when
// they are signaled: it opens a pidfd for each, reads the group's members
// again and signals through the pidfds of those still listed, so a pid
// reused by a process outside the group after the first read is not
// signaled. Without pidfd_open (before Linux 5.3) it signals by pid.
func signalAll(pids []int, files []string) {
	fds := make(map[int]int, len(pids))
	defer func() {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
	}()
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
		switch {
		case err == nil:
			fds[pid] = fd
		case errors.Is(err, syscall.ENOSYS):
			for _, pid := range pids {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
			return
		}
		// ESRCH: gone already.
	}
	still, err := readProcs(files)
	if err != nil {
		return // the caller reads them again
	}
	for pid, fd := range fds {
		if slices.Contains(still, pid) {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
	}
}

// readProcs reads the pids in the cgroup.procs files, each pid once.
func readProcs(files []string) ([]int, error) {
	var pids []int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for line := range strings.FieldsSeq(string(data)) {
			pid, err := strconv.Atoi(line)
			if err != nil {
				return nil, fmt.Errorf("parsing %s: %w", f, err)
			}
			if !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}

// readEventCount reads the count of key in a flat-keyed events file
// ("max 3" lines), 0 when the key is absent.
func readEventCount(file, key string) (int64, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || k != key {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %s: %w", file, err)
		}
		return n, nil
	}
	return 0, sc.Err()
}

// allMissing reports whether none of dirs exists.
func allMissing(dirs []string) bool {
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			return false
		}
	}
	return true
}

// rmdirMissingOK removes the empty directory dir, if it exists.
func rmdirMissingOK(dir string) error {
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	return nil
}

// toInt64 converts a counter, capping it at math.MaxInt64 (the kernel's
// "max" reads as MaxUint64).
func toInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// readFields reads a space-separated cgroup file.
func readFields(file string) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(data)), nil
}

// detect picks the cgroup version of this machine and names its parent
// group.
func detect() (key string, create func() (backend, error), err error) {
	switch mode() {
	case modeV1:
		return "v1", openV1, nil
	case modeV2:
		return "v2:" + defaultMount, func() (backend, error) { return openV2(defaultMount, requiredControllers) }, nil
	default:
		return "", nil, errors.New("cgroup: no cgroup file system mounted at " + defaultMount)
	}
}
