package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// removeStale removes, beside parentDir, the "harness-<pid>" groups of
// processes that are gone (a server that exited without Close, or was
// killed), with their empty command groups. A group that still holds a
// process is left alone (rmdir refuses it).
func removeStale(parentDir string) {
	entries, err := os.ReadDir(filepath.Dir(parentDir))
	if err != nil {
		return
	}
	for _, e := range entries {
		pidText, ok := strings.CutPrefix(e.Name(), "harness-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || !e.IsDir() || pid == os.Getpid() || alive(pid) {
			continue
		}
		dir := filepath.Join(filepath.Dir(parentDir), e.Name())
		children, _ := os.ReadDir(dir)
		for _, c := range children {
			if c.IsDir() {
				_ = unix.Rmdir(filepath.Join(dir, c.Name()))
			}
		}
		_ = unix.Rmdir(dir)
	}
}

// alive reports whether a process pid exists (signal 0; EPERM means it
// exists but belongs to another user).
func alive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
