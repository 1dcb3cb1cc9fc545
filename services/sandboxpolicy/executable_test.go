package sandboxpolicy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// TestExecutableProtected (issue 35, the attack review's input): harness's
// binary inside a writable root (a checkout of harness used as the
// workspace, with bin/harness; a binary in a temp root, whoever owns it)
// is a protected path: the file tools' rule names it and the runner's list
// holds it; outside the roots it is nothing to either.
func TestExecutableProtected(t *testing.T) {
	base := realTempDir(t)
	fixture.Build(t, base, "ws/bin/harness: elf\n", "ws/bin/other: x\n", "tmp/t/harness: elf\n", "out/harness: elf\n")
	ws, tmp := filepath.Join(base, "ws"), filepath.Join(base, "tmp")
	for _, c := range []struct {
		exe    string
		listed bool
	}{
		{exe: filepath.Join(ws, "bin/harness"), listed: true},
		{exe: filepath.Join(tmp, "t/harness"), listed: true},
		{exe: filepath.Join(base, "out/harness")},
	} {
		svc, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws, TempRoots: []string{tmp}, Executables: []string{c.exe}})
		require.NoError(t, err)
		// In the shared temp root only a command user's own entries count;
		// the executable counts whoever owns it.
		entries, err := svc.ProtectedEntries(context.Background(), []string{ws, tmp}, os.Geteuid()+1)
		require.NoError(t, err)
		var paths []string
		for _, e := range entries {
			paths = append(paths, e.Path)
		}
		if c.listed {
			assert.Contains(t, paths, c.exe)
			assert.Contains(t, svc.Boundary(svc.Default(), c.exe), "harness's executable", c.exe)
		} else {
			assert.NotContains(t, paths, c.exe)
		}
		assert.Empty(t, svc.Boundary(svc.Default(), filepath.Join(ws, "bin/other")))
	}
}

// TestExecutableThroughSymlinkRefused (issue 35): a server started by a
// path that passes through a symlink inside a writable root (the file, or
// a directory on the way) does not start under read-only or
// workspace-write: the error names the path, the link, the root and the
// remedy; a symlink outside the roots, or danger-full-access, starts, and
// the file the path names is what is protected.
func TestExecutableThroughSymlinkRefused(t *testing.T) {
	base := realTempDir(t)
	fixture.Build(t, base, "ws/", "real/harness: elf\n", "ws/bin/harness: elf\n", "out/")
	ws := filepath.Join(base, "ws")
	require.NoError(t, os.Symlink(filepath.Join(base, "real/harness"), filepath.Join(ws, "harness")))
	require.NoError(t, os.Symlink("../real", filepath.Join(ws, "realdir")))
	require.NoError(t, os.Symlink(filepath.Join(ws, "bin/harness"), filepath.Join(base, "out/harness")))
	for _, c := range []struct {
		path, link string
	}{
		{filepath.Join(ws, "harness"), filepath.Join(ws, "harness")},
		{filepath.Join(ws, "realdir/harness"), filepath.Join(ws, "realdir")},
		{filepath.Join(ws, "sub/../realdir/./harness"), filepath.Join(ws, "realdir")},
	} {
		for _, mode := range []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite} {
			_, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: mode, WorkspaceRoot: ws, TempRoots: []string{}, Executables: []string{c.path}})
			var ee *sandboxpolicy.ExecutableError
			require.True(t, errors.As(err, &ee), "%s under %s: %v", c.path, mode, err)
			assert.Equal(t, c.link, ee.Link)
			assert.Equal(t, ws, ee.Root)
			assert.Equal(t, filepath.Join(base, "real/harness"), ee.Real)
			assert.Equal(t, sandboxpolicy.CodeExecutableExposed, ee.Code())
			assert.Contains(t, err.Error(), "Remedy: start harness by its real path ("+filepath.Join(base, "real/harness")+")")
		}
		_, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.DangerFullAccess, WorkspaceRoot: ws, TempRoots: []string{}, Executables: []string{c.path}})
		require.NoError(t, err, "danger-full-access confines nothing to protect it by")
	}
	svc, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws, TempRoots: []string{}, Executables: []string{filepath.Join(base, "out/harness")}})
	require.NoError(t, err, "a link outside the roots")
	assert.Contains(t, svc.Boundary(svc.Default(), filepath.Join(ws, "bin/harness")), "harness's executable")
	_, err = sandboxpolicy.New(sandboxpolicy.Config{Executables: []string{"bin/harness"}})
	require.ErrorContains(t, err, "Executables must be absolute paths")
}
