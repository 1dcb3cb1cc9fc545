//go:build linux

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
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/search"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/internal/fsbackend"
	"github.com/dsh-go/harness/services/sandbox"
)

// threadFence runs every mutation beneath root on a fresh, locked OS
// thread, as a confined executor would; it counts what it saw.
type threadFence struct {
	root          *dirfd.Dir
	refuse        error
	runs, changes int
	lastErr       error
	// readRefuse is what Read answers; reads the ops shown to it.
	readRefuse error
	reads      []string
}

func (m *threadFence) Mutate(_ context.Context, _ *sandbox.ExecutionPolicy, targets []fs.Target, op func([]fsbackend.Site) error) error {
	if m.refuse != nil {
		return m.refuse
	}
	at := make([]fsbackend.Site, len(targets))
	for i, t := range targets {
		at[i] = fsbackend.Site{Root: m.root, Target: t}
	}
	m.runs++
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		done <- op(at)
	}()
	m.lastErr = <-done
	return m.lastErr
}

func (m *threadFence) Change(_ fsbackend.Site, _ *dirfd.Parent, _ string, change func(func() error) error) error {
	m.changes++
	if change == nil {
		return nil
	}
	return change(nil)
}

// Read records each op shown to it and returns readRefuse.
func (m *threadFence) Read(_ fs.Target, op string, _ int, _ *unix.Stat_t, _ bool) error {
	m.reads = append(m.reads, op)
	return m.readRefuse
}

func (*threadFence) Gate() search.Gate { return nil }

var _ fsbackend.Fence = (*threadFence)(nil)

func TestFenceDecidesWhereMutationsRun(t *testing.T) {
	dir := realTempDir(t)
	ctx := context.Background()
	root, err := dirfd.OpenBeneath(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = root.Close() })
	m := &threadFence{root: root}
	b := fsbackend.New(fsbackend.Settings{Cwd: dir, DiffBasisMaxBytes: 1 << 20}, nil, m)

	t.Run("a write and an edit run through the fence's executor, once each, and land on disk", func(t *testing.T) {
		tg, err := b.Resolve(ctx, "sub/a.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		_, err = b.WriteText(ctx, tg, "one\n", fs.WriteOptions{})
		require.NoError(t, err)
		_, err = b.EditText(ctx, tg, fs.EditRequest{OldString: "one", NewString: "two"})
		require.NoError(t, err)
		assert.Equal(t, "two\n", readFile(t, filepath.Join(dir, "sub", "a.txt")))
		assert.Equal(t, 2, m.runs)
		assert.Equal(t, 2, m.changes, "each publication passes the fence's Change once")
		assert.NoError(t, m.lastErr)
	})

	t.Run("the fence sees the mutation's error: a target outside the site's root escapes", func(t *testing.T) {
		outside := realTempDir(t)
		tg, err := b.Resolve(ctx, filepath.Join(outside, "x.txt"), fs.ResolveOptions{})
		require.NoError(t, err)
		_, err = b.WriteText(ctx, tg, "x", fs.WriteOptions{})
		require.Error(t, err)
		assert.True(t, dirfd.IsEscape(m.lastErr), "got %v", m.lastErr)
		_, statErr := os.Lstat(filepath.Join(outside, "x.txt"))
		assert.ErrorIs(t, statErr, os.ErrNotExist)
	})

	t.Run("a refusal is returned as is and creates nothing", func(t *testing.T) {
		refusal := errors.New("refused")
		m.refuse, m.runs, m.changes = refusal, 0, 0
		defer func() { m.refuse = nil }()
		tg, err := b.Resolve(ctx, "new/b.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		_, err = b.WriteText(ctx, tg, "b", fs.WriteOptions{})
		assert.Same(t, refusal, err)
		_, err = b.EditText(ctx, tg, fs.EditRequest{OldString: "b", NewString: "c"})
		assert.Same(t, refusal, err)
		assert.Zero(t, m.runs+m.changes)
		_, statErr := os.Lstat(filepath.Join(dir, "new"))
		assert.ErrorIs(t, statErr, os.ErrNotExist)
	})
}

// TestFenceDecidesEveryRead: every read of the core shows its open
// descriptor to the fence's Read before reading through it, and returns the
// refusal as it is; a write or an edit over a refused file changes nothing
// on disk (issue 24).
func TestFenceDecidesEveryRead(t *testing.T) {
	dir := realTempDir(t)
	ctx := context.Background()
	root, err := dirfd.OpenBeneath(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = root.Close() })
	file := filepath.Join(dir, "f.txt")
	require.NoError(t, os.WriteFile(file, []byte("secret\n"), 0o640))
	m := &threadFence{root: root}
	b := fsbackend.New(fsbackend.Settings{Cwd: dir, DiffBasisMaxBytes: 1 << 20}, nil, m)
	tg, err := b.Resolve(ctx, "f.txt", fs.ResolveOptions{})
	require.NoError(t, err)
	dirTarget, err := b.Resolve(ctx, ".", fs.ResolveOptions{})
	require.NoError(t, err)
	refusal := &fs.Error{Code: fs.CodeReadDenied, Message: "refused"}
	m.readRefuse = refusal
	cases := []struct {
		name, op string
		call     func() error
	}{
		{"read text", "read", func() error { _, err := b.ReadText(ctx, tg); return err }},
		{"read bytes", "read", func() error { _, err := b.ReadBytes(ctx, tg, 100); return err }},
		{"stream", "read", func() error {
			for _, err := range b.StreamText(ctx, tg) {
				if err != nil {
					return err
				}
			}
			return nil
		}},
		{"stat", "stat", func() error { _, err := b.Stat(ctx, tg); return err }},
		{"lstat", "lstat", func() error { _, err := b.Lstat(ctx, file, fs.ResolveOptions{}); return err }},
		{"list", "list", func() error { _, err := b.ListDir(ctx, dirTarget, fs.ListWindow{}); return err }},
		{"grep", "grep", func() error { _, err := b.Grep(ctx, dirTarget, fs.GrepOptions{Pattern: "secret"}); return err }},
		{"glob", "glob", func() error { _, err := b.Glob(ctx, dirTarget, fs.GlobOptions{Pattern: "*"}); return err }},
		{"write", "write", func() error { _, err := b.WriteText(ctx, tg, "new\n", fs.WriteOptions{}); return err }},
		{"edit", "edit", func() error {
			_, err := b.EditText(ctx, tg, fs.EditRequest{OldString: "secret", NewString: "x"})
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m.reads = nil
			err := c.call()
			assert.Same(t, refusal, err)
			assert.Contains(t, m.reads, c.op)
			assert.Equal(t, "secret\n", readFile(t, file), "nothing changed on disk")
			fi, err := os.Stat(file)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
		})
	}
}
