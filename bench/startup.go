package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Cold start and memory. A cold start is the wall time from spawning the
// server process to the answer of its tools/list: the go-sdk client's
// initialize, its initialized notification, then tools/list. Idle memory is
// the server process's resident set (VmRSS of /proc/PID/status) read right
// after that answer; peak memory is its high-water mark (VmHWM) read just
// before the session of a measurement run closes, so it covers every
// workload of the run. Both are read from the server process itself, which
// startServer checks is the executable it asked for (not a wrapper such as
// a shell or a version-manager shim, whose own figures would be a few
// megabytes).

// startupStats are one series' cold starts and idle resident sets.
type startupStats struct {
	wall []float64 // ms, one per spawn
	idle []float64 // bytes of VmRSS after tools/list, one per spawn
}

// walls are the cold starts in ms (nil for a nil s).
func (s *startupStats) walls() []float64 {
	if s == nil {
		return nil
	}
	return s.wall
}

// idles are the idle resident sets in bytes (nil for a nil s).
func (s *startupStats) idles() []float64 {
	if s == nil {
		return nil
	}
	return s.idle
}

// measureColdStarts spawns every server n times in dir (one untimed spawn
// each first, so that the executables are in the page cache), the servers
// taking turns in alternating order, and returns the timings by series key.
// Wrapped servers and the floor server are left out.
func measureColdStarts(ctx context.Context, cfg config, root string, specs []serverSpec, n int) (map[string]*startupStats, error) {
	var todo []serverSpec
	for _, spec := range specs {
		if !spec.wrapped && spec.key != keyFloor {
			todo = append(todo, spec)
		}
	}
	out := map[string]*startupStats{}
	if n < 1 || len(todo) == 0 {
		return out, nil
	}
	dirs := make([]string, len(todo))
	for i, spec := range todo {
		dirs[i] = filepath.Join(root, "coldstart-"+spec.key)
		if err := os.Mkdir(dirs[i], 0o755); err != nil {
			return nil, err
		}
		if _, err := makeFixture(dirs[i], cfg.fileSize); err != nil {
			return nil, err
		}
		out[spec.key] = &startupStats{}
	}
	progress("cold start: %d spawns of each server (after one untimed)", n)
	for k := -1; k < n; k++ {
		for _, i := range order(len(todo), k%2 == 1) {
			s, err := startServer(ctx, todo[i], dirs[i], cfg.protocol, true)
			if err != nil {
				return nil, err
			}
			if err := s.close(); err != nil {
				return nil, fmt.Errorf("closing %s: %w", todo[i].key, err)
			}
			if k < 0 {
				continue
			}
			st := out[todo[i].key]
			st.wall = append(st.wall, float64(s.startup.Microseconds())/1e3)
			if s.idleRSS > 0 {
				st.idle = append(st.idle, float64(s.idleRSS))
			}
		}
	}
	for _, spec := range todo {
		st := out[spec.key]
		progress("cold start %-14s median %6.1f ms (%.1f–%.1f), idle RSS median %5.1f MB", spec.key, median(st.wall), slices.Min(st.wall), slices.Max(st.wall), median(st.idle)/1e6)
	}
	return out, nil
}

// procStatusBytes returns a memory field of /proc/PID/status ("VmRSS",
// "VmHWM", ...) in bytes.
func procStatusBytes(pid int, field string) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(raw)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != field {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			break
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			break
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s in kB", pid, field)
}

// checkServerProcess returns an error unless the process pid runs the
// executable cmd started (symbolic links resolved): the figures read from
// /proc/PID are then the server's own, not a wrapper's.
func checkServerProcess(cmd *exec.Cmd, pid int) error {
	want, err := filepath.EvalSymlinks(cmd.Path)
	if err != nil {
		return err
	}
	got, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("process %d runs %s, not %s (a wrapper?): no CPU or memory figures for it", pid, got, want)
	}
	return nil
}

// fmtMB formats bytes as megabytes (10^6), one decimal.
func fmtMB(b float64) string {
	if b <= 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f MB", b/1e6)
}

// fmtMs formats milliseconds, one decimal.
func fmtMs(ms float64) string {
	if ms <= 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f ms", ms)
}
