//go:build linux

package subproc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/subproc"
)

// TestBwrapGoneBeforeItsReportLeavesNoChild: bubblewrap clones the
// sandbox's init, then reports its pid, then lets it go on; its child
// waits for that word (an eventfd, bubblewrap.c) holding every descriptor
// bubblewrap had, the stage's status pipe among them. A bubblewrap killed
// in between (a command stopped or timed out while it starts) or dying
// there left that child behind for good, with no parent, and the run
// waiting for the status pipe to close: forever (a CI run's test binary
// hung 30 minutes). A stand-in for bubblewrap forks such a child; the run
// returns, and the child is gone.
func TestBwrapGoneBeforeItsReportLeavesNoChild(t *testing.T) {
	for _, c := range []struct {
		name, then string
		stop       bool
	}{
		{"stopped while it starts", "exec sleep 1000", true},
		{"dies on its own", "exit 1", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "child")
			fake := filepath.Join(dir, "bwrap")
			require.NoError(t, os.WriteFile(fake, fmt.Appendf(nil,
				"#!/bin/sh\nsleep 1000 &\necho $! > %s.new && mv %s.new %s\n%s\n", pidFile, pidFile, pidFile, c.then), 0o755))
			exe, err := subproc.OpenProgram(fake)
			require.NoError(t, err)
			stage, err := subproc.OpenProgram(self(t))
			require.NoError(t, err)

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			child := make(chan int, 1)
			go func() {
				defer close(child)
				for ctx.Err() == nil {
					if b, err := os.ReadFile(pidFile); err == nil {
						if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
							if fd, err := unix.PidfdOpen(pid, 0); err == nil {
								child <- fd
							}
						}
						if c.stop {
							cancel()
						}
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			}()
			type result struct {
				out subproc.Outcome
				err error
			}
			ran := make(chan result, 1)
			go func() {
				out, err := subproc.RunBwrap(ctx, subproc.Bwrap{Exe: exe, Stage: stage},
					subproc.Spec{Command: "true", Dir: dir, Confine: &subproc.Confinement{}}, time.Minute, 1<<20, nil, subproc.Watch{})
				ran <- result{out, err}
			}()
			var r result
			select {
			case r = <-ran:
			case <-time.After(time.Minute):
				if fd, ok := <-child; ok {
					_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
				}
				t.Fatal("the run did not return while bubblewrap's child lived on")
			}
			require.NoError(t, r.err)
			assert.False(t, r.out.Status.Started)
			if c.stop {
				assert.True(t, r.out.Status.Stopped, r.out.Status.Error)
			} else {
				assert.Contains(t, r.out.Status.Error, subproc.SandboxNotStarted)
			}
			fd, ok := <-child
			require.True(t, ok, "the stand-in forked no child")
			defer unix.Close(fd) //nolint:errcheck // a pidfd
			// Killed by the time the run returned: its descriptors, the
			// status pipe's end among them, were closed (the run read that
			// pipe to its end), and its exit follows at once (the pidfd
			// polls readable then).
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 10_000)
			require.NoError(t, err)
			if !assert.Equal(t, 1, n, "bubblewrap's child outlived the run") {
				_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			}
		})
	}
}

// TestBwrapStoppedWhileStartingNeverHangs: commands whose context ends at
// random moments of bubblewrap's start (0 to 8 ms in) each return, and
// leave no bubblewrap child behind. Before waitGroupGone, the third run
// or so hung for good.
func TestBwrapStoppedWhileStartingNeverHangs(t *testing.T) {
	b := sandbox(t)
	dir := t.TempDir()
	before := leftBwraps(t)
	for i := range 100 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Duration(rand.IntN(8000))*time.Microsecond)
		ran := make(chan error, 1)
		go func() {
			_, err := subproc.RunBwrap(ctx, b, subproc.Spec{Command: "true", Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}, Confine: &subproc.Confinement{}},
				time.Minute, 1<<20, nil, subproc.Watch{})
			ran <- err
		}()
		select {
		case err := <-ran:
			require.NoError(t, err)
		case <-time.After(time.Minute):
			t.Fatalf("run %d did not return", i)
		}
		cancel()
	}
	// A killed child is reaped by whoever adopted it, at once.
	deadline := time.Now().Add(10 * time.Second)
	for len(leftBwraps(t)) > len(before) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	assert.Subset(t, before, leftBwraps(t), "bubblewrap children left behind")
}

// leftBwraps returns the pids of the processes named bwrap in this test's
// session whose parent is neither this process nor a bwrap: bubblewrap
// children a dead bubblewrap left (the sandbox's init leaves the session
// only once bubblewrap has let it go on).
func leftBwraps(t *testing.T) []int {
	t.Helper()
	sid, err := unix.Getsid(0)
	require.NoError(t, err)
	type proc struct {
		comm      string
		ppid, sid int
	}
	procs := map[int]proc{}
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session ...
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		f := strings.Fields(s[end+1:])
		if open < 0 || len(f) < 4 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		psid, _ := strconv.Atoi(f[3])
		procs[pid] = proc{s[open+1 : end], ppid, psid}
	}
	var left []int
	for pid, p := range procs {
		if p.comm == "bwrap" && p.sid == sid && p.ppid != os.Getpid() && procs[p.ppid].comm != "bwrap" {
			left = append(left, pid)
		}
	}
	return left
}
