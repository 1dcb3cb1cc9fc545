//go:build linux

package fssandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// TestMoveAcrossWritableRoots moves a file and a directory from the
// workspace to a temp root and back under workspace-write, with Landlock on
// (when the kernel has it) and off: a move spans two writable roots, so its
// one Landlock domain allows writes beneath both. The entries must arrive on
// disk with their bytes, and leave nothing at the source.
func TestMoveAcrossWritableRoots(t *testing.T) {
	for _, ll := range []string{fssandbox.LandlockAuto, fssandbox.LandlockOff} {
		t.Run("landlock "+ll, func(t *testing.T) {
			w := newWorld(t)
			tmpRoot := filepath.Join(w.base, "ws2")
			f := newFence(t, sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: w.ws, TempRoots: []string{tmpRoot}}, w.ws, fssandbox.Config{Landlock: ll})
			if ll == fssandbox.LandlockAuto && f.Layers().LandlockABI == 0 {
				t.Logf("no Landlock domain here (%s): the case runs on the fallback", f.Layers().NoLandlock)
			}
			ctx := context.Background()
			require.NoError(t, os.WriteFile(filepath.Join(w.ws, "a.txt"), []byte("alpha\n"), 0o640))
			require.NoError(t, os.MkdirAll(filepath.Join(w.ws, "d", "e"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(w.ws, "d", "e", "f.txt"), []byte("deep\n"), 0o600))
			move := func(from, to string) {
				t.Helper()
				src, err := f.Resolve(ctx, from, fs.ResolveOptions{})
				require.NoError(t, err)
				dst, err := f.Resolve(ctx, to, fs.ResolveOptions{})
				require.NoError(t, err)
				_, err = f.Move(ctx, src, dst, fs.MoveOptions{})
				require.NoError(t, err, "move %s to %s", from, to)
			}

			move(filepath.Join(w.ws, "a.txt"), filepath.Join(tmpRoot, "a.txt"))
			assert.Equal(t, "alpha\n", readFile(t, filepath.Join(tmpRoot, "a.txt")))
			assert.NoFileExists(t, filepath.Join(w.ws, "a.txt"))
			st, err := os.Stat(filepath.Join(tmpRoot, "a.txt"))
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o640), st.Mode().Perm())

			move(filepath.Join(w.ws, "d"), filepath.Join(tmpRoot, "d"))
			assert.Equal(t, "deep\n", readFile(t, filepath.Join(tmpRoot, "d", "e", "f.txt")))
			assert.NoDirExists(t, filepath.Join(w.ws, "d"))

			move(filepath.Join(tmpRoot, "d"), filepath.Join(w.ws, "back"))
			assert.Equal(t, "deep\n", readFile(t, filepath.Join(w.ws, "back", "e", "f.txt")))
			assert.NoDirExists(t, filepath.Join(tmpRoot, "d"))

			// Outside every root stays denied, with nothing moved.
			src, err := f.Resolve(ctx, filepath.Join(tmpRoot, "a.txt"), fs.ResolveOptions{})
			require.NoError(t, err)
			dst, err := f.Resolve(ctx, filepath.Join(w.outside, "a.txt"), fs.ResolveOptions{})
			require.NoError(t, err)
			_, err = f.Move(ctx, src, dst, fs.MoveOptions{})
			assert.EqualValues(t, fs.CodeSandboxDenied, fs.CodeOf(err))
			assert.Equal(t, "alpha\n", readFile(t, filepath.Join(tmpRoot, "a.txt")))
			assert.NoFileExists(t, filepath.Join(w.outside, "a.txt"))
		})
	}
}
