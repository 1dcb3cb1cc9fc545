//go:build linux

package fssandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// repoSpecs lay out a workspace with a repository, a nested repository, a
// linked worktree whose `.git` file points at a gitdir elsewhere inside the
// workspace, and a secrets directory for --protect.
var repoSpecs = []string{
	".git/HEAD: ref: refs/heads/main",
	".git/config: [core]\n\tbare = false\n",
	".git/hooks/",
	".git/objects/",
	".git/refs/heads/",
	"vendor/lib/.git/HEAD: ref: refs/heads/main",
	"vendor/lib/.git/config: [core]\n",
	"vendor/lib/.git/objects/",
	"vendor/lib/.git/refs/",
	"wt/.git: gitdir: ../store/wt.git",
	"store/wt.git/HEAD: ref: refs/heads/main",
	"store/wt.git/config: [core]\n",
	"store/wt.git/objects/",
	"store/wt.git/refs/",
	"secrets/token: t0ken",
	"src/main.go: package main",
	"d/",
}

// TestProtectedPaths is issue 12's third escape: `.git/` was writable, so a
// write became code execution (core.fsmonitor in .git/config, hooks). Under
// workspace-write version-control metadata, the directory a `.git` file
// points to, and --protect patterns are read-only; escalated to
// danger-full-access the write lands.
func TestProtectedPaths(t *testing.T) {
	var fence fssandbox.Config
	cases := []struct {
		name, path string
		edit       bool // an edit adding core.fsmonitor, else a write
		allowed    bool
	}{
		{name: "an edit adding fsmonitor to .git/config is denied", path: ".git/config", edit: true},
		{name: "a new hook in .git/hooks is denied", path: ".git/hooks/pre-commit"},
		{name: "a nested repository's .git is denied", path: "vendor/lib/.git/config", edit: true},
		{name: "the gitdir a .git file points to is protected", path: "store/wt.git/config", edit: true},
		{name: "a new file in that gitdir is denied", path: "store/wt.git/hooks/post-checkout"},
		{name: "the .git file itself is denied", path: "wt/.git"},
		{name: "a .git not yet created is denied, and no directory is made", path: "new/deep/.git/config"},
		{name: "an .hg directory is denied", path: "x/.hg/hgrc"},
		{name: "a .jj directory is denied", path: ".jj/repo/config.toml"},
		{name: "an .svn directory is denied", path: ".svn/entries"},
		{name: "a --protect pattern is denied", path: "secrets/token"},
		{name: "a .git spelled through dot-dot is denied", path: "src/../.git/config", edit: true},
		{name: "an ordinary file is allowed", path: "src/main.go", allowed: true},
		{name: ".gitignore is not metadata", path: ".gitignore", allowed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, landlock := range []string{fssandbox.LandlockAuto, fssandbox.LandlockOff} {
				w := newWorld(t)
				fixture.Build(t, w.ws, repoSpecs...)
				fence.Landlock = landlock
				f := newFence(t, sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: w.ws, TempRoots: []string{}, Protect: []string{"secrets/"}}, w.ws, fence)
				before := fixture.Snapshot(t, w.base)
				err := protectedMutation(f, filepath.Join(w.ws, tc.path), tc.edit, nil)
				if tc.allowed {
					require.NoError(t, err)
					continue
				}
				assertDenied(t, err, sandbox.WorkspaceWrite)
				assert.Contains(t, errorsCause(err), "protected path", landlock)
				assert.Equal(t, before, fixture.Snapshot(t, w.base), "nothing changed on disk (%s)", landlock)

				danger := sandbox.ExecutionPolicy{Mode: sandbox.DangerFullAccess, WorkspaceRoot: w.ws}
				require.NoError(t, protectedMutation(f, filepath.Join(w.ws, tc.path), tc.edit, &danger), "escalated, it lands")
				if tc.edit {
					assert.Contains(t, readFile(t, filepath.Join(w.ws, tc.path)), "fsmonitor")
				} else {
					assert.Equal(t, "#!/bin/sh\ntouch /tmp/pwned\n", readFile(t, filepath.Join(w.ws, tc.path)))
				}
			}
		})
	}
}

// protectedMutation writes a hook to p, or edits p to add core.fsmonitor.
func protectedMutation(f *fssandbox.FileSystem, p string, edit bool, pol *sandbox.ExecutionPolicy) error {
	ctx := context.Background()
	tg, err := f.Resolve(ctx, p, fs.ResolveOptions{})
	if err != nil {
		return err
	}
	if edit {
		_, err = f.EditText(ctx, tg, fs.EditRequest{OldString: "[core]\n", NewString: "[core]\n\tfsmonitor = \"touch /tmp/pwned\"\n", Policy: pol})
		return err
	}
	_, err = f.WriteText(ctx, tg, "#!/bin/sh\ntouch /tmp/pwned\n", fs.WriteOptions{Policy: pol})
	return err
}

// errorsCause returns the text of the cause a denial carries.
func errorsCause(err error) string {
	fe, ok := err.(*fs.Error) //nolint:errorlint // the fence returns *fs.Error itself
	if !ok || fe.Err == nil {
		return ""
	}
	return fe.Err.Error()
}

// TestProtectedPathSwap swaps ws/d between a real directory and a link to
// ws/.git (an atomic RENAME_EXCHANGE) while writes to ws/d/config go on: the
// fence decides by where the opened parent is, not by the path sent, so
// .git/config never changes.
func TestProtectedPathSwap(t *testing.T) {
	const writes = 2000
	w := newWorld(t)
	fixture.Build(t, w.ws, repoSpecs...)
	fixture.Build(t, w.ws, "d.swap => .git")
	f := w.sandbox(t, sandbox.WorkspaceWrite)
	config := readFile(t, filepath.Join(w.ws, ".git", "config"))

	stop := make(chan struct{})
	var swapper sync.WaitGroup
	swapper.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(w.ws, "d"), unix.AT_FDCWD, filepath.Join(w.ws, "d.swap"), unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("swap: %v", err)
				return
			}
			time.Sleep(20 * time.Microsecond)
		}
	})
	var landed, denied atomic.Int64
	var writers sync.WaitGroup
	for g := range 4 {
		writers.Go(func() {
			for i := g; i < writes; i += 4 {
				tg, err := f.Resolve(context.Background(), filepath.Join(w.ws, "d", "config"), fs.ResolveOptions{})
				if err == nil {
					_, err = f.WriteText(context.Background(), tg, "[core]\n\tfsmonitor = x\n", fs.WriteOptions{})
				}
				switch {
				case err == nil:
					landed.Add(1)
				case fs.CodeOf(err) == fs.CodeSandboxDenied:
					denied.Add(1)
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	swapper.Wait()
	t.Logf("writes=%d landed=%d denied=%d", writes, landed.Load(), denied.Load())
	assert.Equal(t, config, readFile(t, filepath.Join(w.ws, ".git", "config")), ".git/config unchanged")
	entries, err := os.ReadDir(filepath.Join(w.ws, ".git"))
	require.NoError(t, err)
	assert.Len(t, entries, 5, "nothing added to .git")
	assert.Positive(t, landed.Load())
	assert.Positive(t, denied.Load())
}
