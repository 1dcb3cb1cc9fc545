//go:build linux

package protectscan_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/protectscan"
)

// TestLinkedEntries (issue 34, the attack review's input: a `.bashrc`
// linked into a dotfiles tree): a protected entry that is a symlink is not
// itself an entry; what it resolves to inside a root is, file or
// directory, with Via naming the link, on a fresh walk and on one that
// reuses a kept result; a target outside the roots, a missing one, a root,
// a directory holding the link, and one past the kernel's 40 links are not.
// So is what a link inside a protected directory links to, however many
// entries another protected directory holds.
func TestLinkedEntries(t *testing.T) {
	root, outside := tempRoot(t), tempRoot(t)
	build(t, outside, "far")
	build(t, root, "dots/secret", "dots/dir/", "a.key->dots/secret", "b.key->dots/dir",
		"c.key->"+filepath.Join(outside, "far"), "d.key->dots/missing", "e.key->.",
		// Its own directory, or one above: never made read-only by a
		// link in it (the review: `src/.envrc` linked to `.`).
		"sub/f.key->.", "sub/deeper/g.key->..",
		// A chain of 250 links, which the kernel does not follow past
		// 40 (the review: a chain made every command wait 25 s).
		"chain/end")
	for i := range 250 {
		build(t, root, fmt.Sprintf("chain/l%d->%s", i, filepath.Join(root, "chain", fmt.Sprintf("l%d", i+1))))
	}
	build(t, root, "chain/l250->end",
		// Links inside a protected directory lead out of it (the
		// review: .config/git/config linked to dotfiles/gitconfig).
		"dots2/x", "dots2/y", "conf.key/inner->../dots2/x", "conf.key/sub/deep->../../dots2/y")
	for i := range 100 {
		build(t, root, fmt.Sprintf("many/%d.key->%s", i, filepath.Join(root, "chain/l0")))
	}
	// A protected directory of more entries than are read in one, sorting
	// first (a command's, filled before it was protected): the others are
	// read still (the review: the bound was over all of them).
	full := make([]string, 5000)
	for i := range full {
		full[i] = fmt.Sprintf("0.key/f%d", i)
	}
	build(t, root, full...)
	// A directory of a protected one holding more than is read passes
	// over it, not its siblings (the review: .claude/plugins/market/ of
	// 5,000 files hid .claude/skills/foo/run.sh's link).
	market := make([]string, 5000)
	for i := range market {
		market[i] = fmt.Sprintf("big.key/a/market/f%d", i)
	}
	build(t, root, market...)
	build(t, root, "dots3/run.sh", "big.key/b/foo/run.sh->../../../dots3/run.sh")
	s := protectscan.New(protectscan.Options{})
	for _, walk := range []string{"fresh", "reused"} {
		entries, err := s.Scan(t.Context(), []protectscan.Root{{Path: root}}, protectMeta)
		require.NoError(t, err, walk)
		got := map[string]protectscan.Entry{}
		for _, e := range entries {
			got[e.Path] = e
		}
		require.Len(t, got, 8, "%s: %v", walk, entries)
		assert.Equal(t, filepath.Join(root, "big.key/b/foo/run.sh"), got[filepath.Join(root, "dots3/run.sh")].Via, walk)
		assert.True(t, got[filepath.Join(root, "0.key")].Dir, walk)
		assert.Equal(t, filepath.Join(root, "conf.key/inner"), got[filepath.Join(root, "dots2/x")].Via, walk)
		assert.Equal(t, filepath.Join(root, "conf.key/sub/deep"), got[filepath.Join(root, "dots2/y")].Via, walk)
		assert.True(t, got[filepath.Join(root, "conf.key")].Dir, walk)
		secret, dir := got[filepath.Join(root, "dots/secret")], got[filepath.Join(root, "dots/dir")]
		assert.Equal(t, filepath.Join(root, "a.key"), secret.Via, walk)
		assert.False(t, secret.Dir, walk)
		assert.NotZero(t, secret.Ino, walk)
		assert.Equal(t, filepath.Join(root, "b.key"), dir.Via, walk)
		assert.True(t, dir.Dir, walk)
	}
}
