//go:build linux

package fssandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
)

// TestWritePathsCloseEveryDescriptor runs the write and edit paths that now
// read through dirfd.File (the guard's locked file read again by pread, the
// prior file opened once) through their successes and refusals, a FIFO and
// a directory at the target included, and checks that no descriptor is left
// open, that none of them hangs, and what the disk holds afterwards.
func TestWritePathsCloseEveryDescriptor(t *testing.T) {
	w := newWorld(t)
	fixture.Build(t, w.ws, "f.txt: secret\n", "dir/")
	require.NoError(t, unix.Mkfifo(filepath.Join(w.ws, "fifo"), 0o644))
	f := w.sandbox(t, sandbox.WorkspaceWrite)
	ctx := context.Background()
	target := func(name string) fs.Target {
		tg, err := f.Resolve(ctx, filepath.Join(w.ws, name), fs.ResolveOptions{})
		require.NoError(t, err)
		return tg
	}
	round := func() {
		info, err := f.Stat(ctx, target("f.txt"))
		require.NoError(t, err)
		_, err = f.WriteText(ctx, target("f.txt"), "secret\n", fs.WriteOptions{Intent: fs.ReplaceSeen(fs.Observation{Version: info.Version})})
		require.NoError(t, err)
		_, err = f.WriteText(ctx, target("f.txt"), "x", fs.WriteOptions{Intent: fs.ReplaceSeen(fs.Observation{Version: "stale"})})
		require.ErrorIs(t, err, fs.ErrStaleVersion)
		_, err = f.WriteText(ctx, target("f.txt"), "x", fs.WriteOptions{Intent: fs.CreateOnly()})
		require.Error(t, err)
		_, err = f.EditText(ctx, target("f.txt"), fs.EditRequest{OldString: "absent", NewString: "y"})
		require.Error(t, err)
		_, err = f.EditText(ctx, target("f.txt"), fs.EditRequest{OldString: "secret", NewString: "edited"})
		require.NoError(t, err)
		assert.Equal(t, "edited\n", readFile(t, filepath.Join(w.ws, "f.txt")))
		for _, name := range []string{"fifo", "dir"} {
			_, err = f.WriteText(ctx, target(name), "x", fs.WriteOptions{})
			require.ErrorIs(t, err, fs.ErrNotRegularFile, name)
			_, err = f.WriteText(ctx, target(name), "x", fs.WriteOptions{Intent: fs.ReplaceSeen(fs.Observation{Version: "v"})})
			require.Error(t, err, name)
			_, err = f.EditText(ctx, target(name), fs.EditRequest{OldString: "a", NewString: "b"})
			require.Error(t, err, name)
		}
		_, err = f.WriteText(ctx, target("f.txt"), "secret\n", fs.WriteOptions{})
		require.NoError(t, err)
	}
	round() // warm up: the pinned roots and the Landlock threads
	open := openDescriptors(t)
	for range 20 {
		round()
	}
	assert.Equal(t, open, openDescriptors(t), "descriptors left open")
	assert.Equal(t, "secret\n", readFile(t, filepath.Join(w.ws, "f.txt")))
	st, err := os.Lstat(filepath.Join(w.ws, "fifo"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeNamedPipe, st.Mode().Type(), "the FIFO is still a FIFO")
	assert.Empty(t, fixture.Residue(t, w.ws))
}

func openDescriptors(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}
