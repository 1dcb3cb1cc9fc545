//go:build linux

package fssandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
)

// TestDenyReadLinkOutOfADeniedDirectory (issue 34, the attack review's
// finding 7): a key kept in a dotfiles tree and linked into ~/.ssh (a file
// link, and a directory link `~/.ssh/keys -> ~/dotfiles/keys`), in the
// workspace or out of it, is the denied file read through the link: the
// file tools refuse to read it by its own path (read, and grep over the
// workspace, which finds nothing in it), and to replace or remove it, and
// its bytes stay; a link beneath a directory of 5,000 files that sorts
// first in ~/.ssh is still found (the bound is each directory's own, a
// large directory passed over); a plain file of the dotfiles tree stays
// readable, and so do /usr and the home, which links in ~/.ssh name.
func TestDenyReadLinkOutOfADeniedDirectory(t *testing.T) {
	ctx := context.Background()
	w := newDenyWorld(t)
	ssh := filepath.Dir(w.key)
	inWS := filepath.Join(w.ws, "dotfiles", "ssh", "id_work")
	outWS := filepath.Join(w.home, "dotfiles", "id_home")
	keysDir := filepath.Join(w.ws, "dotfiles", "keys")
	deep := filepath.Join(w.ws, "dotfiles", "deep_key")
	for _, p := range []string{inWS, outWS, filepath.Join(keysDir, "id_dir"), deep} {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(keyMarker+"\n"), 0o600))
	}
	plain := filepath.Join(w.ws, "dotfiles", "README")
	require.NoError(t, os.WriteFile(plain, []byte("plain\n"), 0o644))
	require.NoError(t, os.Symlink(inWS, filepath.Join(ssh, "id_work")))
	require.NoError(t, os.Symlink("../dotfiles/id_home", filepath.Join(ssh, "id_home")))
	require.NoError(t, os.Symlink(keysDir, filepath.Join(ssh, "keys")))
	// A large directory sorting first, and a link in a directory after it.
	big := filepath.Join(ssh, "a_cache")
	require.NoError(t, os.Mkdir(big, 0o700))
	for i := range 5000 {
		require.NoError(t, os.WriteFile(filepath.Join(big, fmt.Sprintf("f%04d", i)), nil, 0o600))
	}
	require.NoError(t, os.Mkdir(filepath.Join(ssh, "z"), 0o700))
	require.NoError(t, os.Symlink(deep, filepath.Join(ssh, "z", "deep_key")))

	// Links to what is no one's secret (/usr: the attack review denied
	// every command's shell so) and to the home itself: not denied.
	require.NoError(t, os.Symlink("/usr", filepath.Join(ssh, "sys")))
	require.NoError(t, os.Symlink(w.home, filepath.Join(ssh, "home")))

	f := w.fence(t, sandbox.WorkspaceWrite)
	resolve := func(p string) fs.Target {
		tg, err := f.Resolve(ctx, p, fs.ResolveOptions{})
		require.NoError(t, err)
		return tg
	}
	for _, p := range []string{inWS, outWS, filepath.Join(keysDir, "id_dir"), deep} {
		text, err := f.ReadText(ctx, resolve(p))
		assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "%s: %v", p, err)
		assert.NotContains(t, text, keyMarker, p)
	}
	res, err := f.Grep(ctx, resolve("."), fs.GrepOptions{Pattern: keyMarker})
	require.NoError(t, err)
	assert.Empty(t, res.Files, "grep read a linked key")
	_, err = f.WriteText(ctx, resolve(inWS), "x\n", fs.WriteOptions{})
	assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "%v", err)
	_, err = f.Remove(ctx, resolve(filepath.Join(keysDir, "id_dir")), fs.RemoveOptions{})
	assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "%v", err)
	for _, p := range []string{inWS, outWS, filepath.Join(keysDir, "id_dir"), deep} {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, keyMarker+"\n", string(b), p)
	}
	text, err := f.ReadText(ctx, resolve(plain))
	require.NoError(t, err)
	assert.Equal(t, "plain\n", text)
	if _, err := os.Stat("/usr/lib/os-release"); err == nil {
		_, err = f.ReadText(ctx, resolve("/usr/lib/os-release"))
		require.NoError(t, err, "a link to /usr denies nothing")
	}
	notes := filepath.Join(w.home, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("n\n"), 0o644))
	text, err = f.ReadText(ctx, resolve(notes))
	require.NoError(t, err, "a link to the home denies nothing")
	assert.Equal(t, "n\n", text)
}

// TestDenyReadLinksOnlyInDirectoriesThatWere (the attack reviews of issue
// 34): the fence follows links only in the anchored denied directories
// that existed when it was made: a `~/.kube` made later (by a command, in a
// home workspace) whose link names the workspace's src/ denies nothing.
func TestDenyReadLinksOnlyInDirectoriesThatWere(t *testing.T) {
	ctx := context.Background()
	w := newDenyWorld(t)
	src := filepath.Join(w.ws, "src")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n"), 0o644))
	f := w.fence(t, sandbox.WorkspaceWrite)
	kube := filepath.Join(w.home, ".kube")
	require.NoError(t, os.Mkdir(kube, 0o700))
	require.NoError(t, os.Symlink(src, filepath.Join(kube, "x")))
	tg, err := f.Resolve(ctx, filepath.Join(src, "main.go"), fs.ResolveOptions{})
	require.NoError(t, err)
	text, err := f.ReadText(ctx, tg)
	require.NoError(t, err)
	assert.Equal(t, "package main\n", text)
	_, err = f.WriteText(ctx, tg, "package main\n\nfunc main() {}\n", fs.WriteOptions{})
	require.NoError(t, err)
}

// TestDenyReadLinkChainRepointed (the attack review of issue 34): with
// `~/.ssh/id_chain -> ws/current -> ssh2/key`, deleting the intermediate
// link `current` (the delete tool, or a command) does not free the key once
// the fence's snapshot is taken again: what a denied link led to stays
// denied while it is the same file at the same path.
func TestDenyReadLinkChainRepointed(t *testing.T) {
	ctx := context.Background()
	w := newDenyWorld(t)
	key := filepath.Join(w.ws, "ssh2", "key")
	require.NoError(t, os.MkdirAll(filepath.Dir(key), 0o755))
	require.NoError(t, os.WriteFile(key, []byte(keyMarker+"\n"), 0o644))
	current := filepath.Join(w.ws, "current")
	require.NoError(t, os.Symlink("ssh2/key", current))
	require.NoError(t, os.Symlink(current, filepath.Join(filepath.Dir(w.key), "id_chain")))
	f := w.fence(t, sandbox.WorkspaceWrite)
	read := func() (string, error) {
		tg, err := f.Resolve(ctx, key, fs.ResolveOptions{})
		require.NoError(t, err)
		return f.ReadText(ctx, tg)
	}
	text, err := read()
	assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "%v", err)
	assert.NotContains(t, text, keyMarker)
	require.NoError(t, os.Remove(current))
	time.Sleep(2100 * time.Millisecond) // the identity snapshot is taken again
	text, err = read()
	assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "the key read once the chain was broken: %v", err)
	assert.NotContains(t, text, keyMarker)
}
