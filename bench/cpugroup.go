package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cpuacctRoot is the cgroup v1 cpuacct hierarchy's mount.
const cpuacctRoot = "/sys/fs/cgroup/cpuacct"

// cpuGroup is a cgroup v1 cpuacct group holding one contender of the exec
// round trip: its cpuacct.usage counts the CPU time of every task that
// ran in it, whoever reaps them. A process's rusage does not: bubblewrap's
// process that is the sandbox's pid 1 (it makes the mounts, then runs the
// inner stage and the shell) outlives the bwrap that started it and is
// reaped by init, so its time, and that of everything it reaped, is in no
// rusage the bench or harness sees (on this machine rusage showed 2.0 ms
// for a bare `bwrap ... true` that `perf stat` counts 4.5 ms of, and 24 ms
// for an exec of `true` that costs 55). harness moves a command only in the
// memory and pids hierarchies, so its commands stay in their server's
// cpuacct group.
type cpuGroup struct{ dir string }

// newCPUGroup makes the group name of this bench process. Errors: no
// cgroup v1 cpuacct hierarchy (cgroup v2 alone, where harness's command
// cgroups leave the server's; the bench then uses rusage), or no right to
// make a group (not root).
func newCPUGroup(name string) (*cpuGroup, error) {
	if _, err := os.Stat(filepath.Join(cpuacctRoot, "cpuacct.usage")); err != nil {
		return nil, errors.New("no cgroup v1 cpuacct hierarchy at " + cpuacctRoot)
	}
	dir := filepath.Join(cpuacctRoot, fmt.Sprintf("harness-bench-%d-%s", os.Getpid(), name))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	return &cpuGroup{dir: dir}, nil
}

// usage is the CPU time of every task that has run in the group (-1 when
// unknown).
func (g *cpuGroup) usage() time.Duration {
	if g == nil {
		return -1
	}
	b, err := os.ReadFile(filepath.Join(g.dir, "cpuacct.usage"))
	if err != nil {
		return -1
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return -1
	}
	return time.Duration(ns)
}

// addProcess moves process pid, every thread of it, into the group; the
// children it starts from then on are in it too.
func (g *cpuGroup) addProcess(pid int) error {
	return os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
}

// start starts cmd inside the group and returns when it started, and the
// function to call once cmd has been waited for: a thread of its own joins
// the group (cgroup v1's tasks file), forks cmd (a child is in its forking
// thread's group) and stays, idle, until that call (cmd's Pdeathsig is
// sent when the thread that forked it ends), then ends with its goroutine.
// Nothing else of the bench is counted, and the migration (several
// milliseconds: the kernel waits for an RCU grace period) comes before the
// returned time, outside what is timed.
func (g *cpuGroup) start(cmd *exec.Cmd) (time.Time, func(), error) {
	type started struct {
		at  time.Time
		err error
	}
	done := make(chan started, 1)
	waited := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		tid := []byte(strconv.Itoa(unix.Gettid()))
		if err := os.WriteFile(filepath.Join(g.dir, "tasks"), tid, 0); err != nil {
			done <- started{err: err}
			return
		}
		at := time.Now()
		err := cmd.Start()
		done <- started{at, err}
		if err == nil {
			<-waited
		}
	}()
	s := <-done
	return s.at, func() { close(waited) }, s.err
}

// remove removes the group once its last task has gone, trying for a
// second.
func (g *cpuGroup) remove() {
	if g == nil {
		return
	}
	for range 100 {
		if err := unix.Rmdir(g.dir); err == nil || errors.Is(err, unix.ENOENT) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
