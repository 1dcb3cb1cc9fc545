//go:build linux

package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// hybridUnified is where hybrid machines mount the unified hierarchy,
// without the controllers their v1 hierarchies hold.
const hybridUnified = "/sys/fs/cgroup/unified"

// The v2 code paths that do not need the memory and pids controllers
// (making the parent and a group, Add, cgroup.kill, removal) run against a
// hybrid machine's unified hierarchy; Open's refusal of a v2 hierarchy
// without those controllers too.
func TestV2OnHybridUnifiedMount(t *testing.T) {
	var st unix.Statfs_t
	if err := unix.Statfs(hybridUnified, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		t.Skipf("no cgroup2 hierarchy at %s (only hybrid machines have one there)", hybridUnified)
	}
	data, err := os.ReadFile(filepath.Join(hybridUnified, "cgroup.controllers"))
	require.NoError(t, err)
	if !strings.Contains(string(data), "memory") || !strings.Contains(string(data), "pids") {
		_, err := openV2(hybridUnified, requiredControllers)
		assert.ErrorContains(t, err, "not available")
	}

	m, err := open(func() (string, func() (backend, error), error) {
		return "test:" + hybridUnified, func() (backend, error) { return openV2(hybridUnified, nil) }, nil
	})
	if err != nil {
		t.Skipf("cannot create cgroups in %s as uid %d: %v", hybridUnified, os.Geteuid(), err)
	}
	t.Cleanup(func() { _ = m.Close() }) // on failure; a second Close is a no-op
	assert.Equal(t, "cgroup v2", m.Kind())
	parent := backendDirs(m.b)
	_, err = m.New("capped", Limits{Pids: 5})
	assert.ErrorContains(t, err, "no pids controller")
	assert.NoDirExists(t, filepath.Join(parent[0], "capped"), "a group New could not finish is removed")

	g, err := m.New("v2", Limits{})
	require.NoError(t, err)
	cmd := exec.Command("/bin/sh", "-c", "sleep 30 & wait")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.NoError(t, g.Add(cmd.Process.Pid))
	self, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	got, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", cmd.Process.Pid))
	require.NoError(t, err)
	selfPath := unifiedPath(string(self))
	assert.Equal(t, filepath.Join(selfPath, fmt.Sprintf("harness-%d", os.Getpid()), "v2"), unifiedPath(string(got)))
	_, err = g.Stats()
	require.NoError(t, err)

	dirs := g.b.dirs()
	require.FileExists(t, g.b.killFile())
	require.NoError(t, g.Delete())
	for _, d := range dirs {
		assert.NoDirExists(t, d)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	ws, _ := ee.Sys().(syscall.WaitStatus)
	assert.Equal(t, syscall.SIGKILL, ws.Signal())
	require.NoError(t, m.Close())
	for _, d := range parent {
		assert.NoDirExists(t, d)
	}
}

// unifiedPath is the "0::" path of a /proc/<pid>/cgroup.
func unifiedPath(procCgroup string) string {
	for line := range strings.Lines(procCgroup) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			return p
		}
	}
	return ""
}
