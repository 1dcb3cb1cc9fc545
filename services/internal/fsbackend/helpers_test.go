//go:build linux

package fsbackend_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
)

// newFS returns a backend rooted at a fresh directory, and that directory.
func newFS(t testing.TB, cfg fslocal.Config) (*fslocal.FileSystem, string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	if cfg.Cwd == "" {
		cfg.Cwd = dir
	}
	f, err := fslocal.New(cfg, nil)
	require.NoError(t, err)
	return f, dir
}

// resolve resolves p against the backend's cwd.
func resolve(t testing.TB, f *fslocal.FileSystem, p string) fs.Target {
	t.Helper()
	tg, err := f.Resolve(context.Background(), p, fs.ResolveOptions{})
	require.NoError(t, err)
	return tg
}

// versionOf returns the current version of target.
func versionOf(t testing.TB, f *fslocal.FileSystem, tg fs.Target) fs.Version {
	t.Helper()
	info, err := f.Stat(context.Background(), tg)
	require.NoError(t, err)
	require.NotNil(t, info)
	return info.Version
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

func strp(s string) *string { return &s }

func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
