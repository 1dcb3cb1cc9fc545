package fsbackend_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/internal/fsbackend"
	"github.com/dsh-go/harness/services/sandbox"
)

// threadMounter mounts every mutation beneath root and runs it on a fresh,
// locked OS thread, as a confined executor would; it counts what it saw.
type threadMounter struct {
	root        *dirfd.Dir
	refuse      error
	runs, dones int
	lastErr     error
}

func (m *threadMounter) Mount(_ context.Context, target fs.Target, _ *sandbox.ExecutionPolicy) (fsbackend.Mount, error) {
	if m.refuse != nil {
		return fsbackend.Mount{}, m.refuse
	}
	return fsbackend.Mount{
		Root:   m.root,
		Target: target,
		Run: func(mutate func() error) error {
			m.runs++
			done := make(chan error)
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				done <- mutate()
			}()
			return <-done
		},
		Done: func(err error) error {
			m.dones++
			m.lastErr = err
			return err
		},
	}, nil
}

func TestMounterDecidesWhereMutationsRun(t *testing.T) {
	dir := realTempDir(t)
	ctx := context.Background()
	root, err := dirfd.OpenBeneath(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = root.Close() })
	m := &threadMounter{root: root}
	b := fsbackend.New(fsbackend.Settings{Cwd: dir, DiffBasisMaxBytes: 1 << 20}, nil, m)

	t.Run("a write and an edit run through the mount's executor, once each, and land on disk", func(t *testing.T) {
		tg, err := b.Resolve(ctx, "sub/a.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		_, err = b.WriteText(ctx, tg, "one\n", fs.WriteOptions{})
		require.NoError(t, err)
		_, err = b.EditText(ctx, tg, fs.EditRequest{OldString: "one", NewString: "two"})
		require.NoError(t, err)
		assert.Equal(t, "two\n", readFile(t, filepath.Join(dir, "sub", "a.txt")))
		assert.Equal(t, 2, m.runs)
		assert.Equal(t, 2, m.dones)
		assert.NoError(t, m.lastErr)
	})

	t.Run("Done sees the mutation's error: a target outside the mount's root escapes", func(t *testing.T) {
		outside := realTempDir(t)
		tg, err := b.Resolve(ctx, filepath.Join(outside, "x.txt"), fs.ResolveOptions{})
		require.NoError(t, err)
		_, err = b.WriteText(ctx, tg, "x", fs.WriteOptions{})
		require.Error(t, err)
		assert.True(t, dirfd.IsEscape(m.lastErr), "got %v", m.lastErr)
		_, statErr := os.Lstat(filepath.Join(outside, "x.txt"))
		assert.ErrorIs(t, statErr, os.ErrNotExist)
	})

	t.Run("a refused mount returns its error as is and creates nothing", func(t *testing.T) {
		refusal := errors.New("refused")
		m.refuse, m.runs, m.dones = refusal, 0, 0
		defer func() { m.refuse = nil }()
		tg, err := b.Resolve(ctx, "new/b.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		_, err = b.WriteText(ctx, tg, "b", fs.WriteOptions{})
		assert.Same(t, refusal, err)
		_, err = b.EditText(ctx, tg, fs.EditRequest{OldString: "b", NewString: "c"})
		assert.Same(t, refusal, err)
		assert.Zero(t, m.runs+m.dones)
		_, statErr := os.Lstat(filepath.Join(dir, "new"))
		assert.ErrorIs(t, statErr, os.ErrNotExist)
	})
}
