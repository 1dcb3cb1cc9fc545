//go:build linux

package fssandbox_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// world is a test layout: a workspace, an outside directory beside it, and
// sibling-prefix directories, all under one canonical base. With no temp
// roots, the workspace is the only writable root, so "outside" is outside
// every root even though the base lives under /tmp.
type world struct {
	base, ws, outside string
}

func newWorld(t *testing.T) world {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	w := world{base: base, ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{w.ws, w.outside, filepath.Join(base, "ws-evil"), filepath.Join(base, "ws2")} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	return w
}

// sandbox returns a confining backend for w with the given default mode and
// no temp roots.
func (w world) sandbox(t *testing.T, mode sandbox.Mode) *fssandbox.FileSystem {
	t.Helper()
	return newSandbox(t, sandboxpolicy.Config{Mode: mode, WorkspaceRoot: w.ws, TempRoots: []string{}}, w.ws)
}

func newSandbox(t *testing.T, cfg sandboxpolicy.Config, cwd string) *fssandbox.FileSystem {
	t.Helper()
	return newFence(t, cfg, cwd, fssandbox.Config{})
}

// newFence is newSandbox with the fence's own configuration.
func newFence(t *testing.T, cfg sandboxpolicy.Config, cwd string, fence fssandbox.Config) *fssandbox.FileSystem {
	t.Helper()
	policy, err := sandboxpolicy.New(cfg)
	require.NoError(t, err)
	f, err := fssandbox.New(policy, fslocal.Config{Cwd: cwd}, fence, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, f.Close()) })
	return f
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}
