//go:build linux

package fssandbox_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// TestEntryOperationsOnProtectedPaths deletes, moves and makes the
// protected paths themselves (the .git directory, a .git file, a --protect
// directory) and moves entries onto them, under workspace-write. The entry
// operations mount the entry's parent, which is not protected; the protected
// entry must still be unchanged on disk.
func TestEntryOperationsOnProtectedPaths(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		run  func(f *fssandbox.FileSystem, tg func(string) fs.Target) error
	}{
		{"delete .git", func(f *fssandbox.FileSystem, tg func(string) fs.Target) error {
			_, err := f.Remove(ctx, tg(".git"), fs.RemoveOptions{Recursive: true})
			return err
		}},
		{"delete a .git file", func(f *fssandbox.FileSystem, tg func(string) fs.Target) error {
			_, err := f.Remove(ctx, tg("wt/.git"), fs.RemoveOptions{})
			return err
		}},
		{"delete a protected directory", func(f *fssandbox.FileSystem, tg func(string) fs.Target) error {
			_, err := f.Remove(ctx, tg("secrets"), fs.RemoveOptions{Recursive: true})
			return err
		}},
		{"move .git away", func(f *fssandbox.FileSystem, tg func(string) fs.Target) error {
			_, err := f.Move(ctx, tg(".git"), tg("stolen"), fs.MoveOptions{})
			return err
		}},
		{"move a directory over .git", func(f *fssandbox.FileSystem, tg func(string) fs.Target) error {
			_, err := f.Move(ctx, tg("evil"), tg(".git"), fs.MoveOptions{Overwrite: true})
			return err
		}},
		{"move a file over a .git file", func(f *fssandbox.FileSystem, tg func(string) fs.Target) error {
			_, err := f.Move(ctx, tg("evil/config"), tg("wt/.git"), fs.MoveOptions{Overwrite: true})
			return err
		}},
		{"move .git away, then a crafted repository in its place", func(f *fssandbox.FileSystem, tg func(string) fs.Target) error {
			if _, err := f.Move(ctx, tg(".git"), tg("stolen"), fs.MoveOptions{}); err != nil {
				return err
			}
			_, err := f.Move(ctx, tg("evil"), tg(".git"), fs.MoveOptions{})
			return err
		}},
		{"move a crafted directory to a new nested .git", func(f *fssandbox.FileSystem, tg func(string) fs.Target) error {
			_, err := f.Move(ctx, tg("evil"), tg("wt/sub/.git"), fs.MoveOptions{})
			return err
		}},
		{"move a protected directory away", func(f *fssandbox.FileSystem, tg func(string) fs.Target) error {
			_, err := f.Move(ctx, tg("secrets"), tg("open"), fs.MoveOptions{})
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			fixture.Build(t, w.ws,
				".git/config: [core]\n",
				".git/HEAD: ref: refs/heads/main",
				".git/objects/",
				".git/refs/",
				"wt/.git: gitdir: ../.git",
				"secrets/key: secret",
				"evil/config: [core]\n\tfsmonitor = evil\n",
				"wt/sub/",
			)
			f := newFence(t, sandboxpolicy.Config{
				Mode: sandbox.WorkspaceWrite, WorkspaceRoot: w.ws, TempRoots: []string{}, Protect: []string{"/secrets"},
			}, w.ws, fssandbox.Config{})
			tg := func(rel string) fs.Target {
				target, err := f.Resolve(ctx, filepath.Join(w.ws, rel), fs.ResolveOptions{})
				require.NoError(t, err)
				return target
			}
			git := fixture.Snapshot(t, filepath.Join(w.ws, ".git"))
			secrets := fixture.Snapshot(t, filepath.Join(w.ws, "secrets"))
			assertDenied(t, c.run(f, tg), sandbox.WorkspaceWrite)
			assert.Equal(t, git, fixture.Snapshot(t, filepath.Join(w.ws, ".git")), ".git changed")
			assert.Equal(t, secrets, fixture.Snapshot(t, filepath.Join(w.ws, "secrets")), "secrets changed")
			assert.Equal(t, "gitdir: ../.git", readFile(t, filepath.Join(w.ws, "wt", ".git")), "wt/.git changed")
			assert.NoDirExists(t, filepath.Join(w.ws, "wt", "sub", ".git"), "a new .git was made")
		})
	}
}

// TestRecursiveDeleteKeepsANestedRepository deletes, recursively, a
// directory that holds a nested repository's .git under workspace-write:
// the directory itself is not protected, the .git beneath it is, and a
// deletion of its contents is a mutation inside a protected path.
func TestRecursiveDeleteKeepsANestedRepository(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	fixture.Build(t, w.ws,
		"vendor/lib/.git/config: [core]\n",
		"vendor/lib/.git/HEAD: ref: refs/heads/main",
		"vendor/lib/.git/objects/",
		"vendor/lib/.git/refs/",
		"vendor/lib/code.go: package lib",
	)
	f := w.sandbox(t, sandbox.WorkspaceWrite)
	tg, err := f.Resolve(ctx, filepath.Join(w.ws, "vendor"), fs.ResolveOptions{})
	require.NoError(t, err)
	vendor := fixture.Snapshot(t, filepath.Join(w.ws, "vendor"))
	_, err = f.Remove(ctx, tg, fs.RemoveOptions{Recursive: true})
	assertDenied(t, err, sandbox.WorkspaceWrite)
	require.DirExists(t, filepath.Join(w.ws, "vendor", "lib", ".git"), "the nested repository was deleted")
	assert.Equal(t, vendor, fixture.Snapshot(t, filepath.Join(w.ws, "vendor")), "a refused recursive delete deletes nothing")
}
