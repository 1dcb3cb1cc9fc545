package fslocal_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
)

// realTempDir returns a fresh temp dir by its canonical path.
func realTempDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return dir
}

// resolve resolves p against the backend's cwd.
func resolve(t testing.TB, f *fslocal.FileSystem, p string) fs.Target {
	t.Helper()
	tg, err := f.Resolve(context.Background(), p, fs.ResolveOptions{})
	require.NoError(t, err)
	return tg
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}
