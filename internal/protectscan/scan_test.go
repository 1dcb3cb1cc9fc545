//go:build linux

package protectscan_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/protectscan"
)

// deep is a `.git` directory 14 levels below the root ws.
var deep = "ws/1/2/3/4/5/6/7/8/9/10/11/12/13/.git/"

// findCases are trees, the roots searched in them (relative to the test's
// base directory) and the entries expected, relative to the base, a
// directory with a trailing slash. "{base}" in the tree is the base.
var findCases = []struct {
	name  string
	tree  []string
	roots []string
	want  []string
}{
	{
		name:  "metadata directories at depth 1, 5 and 14 are all found",
		tree:  []string{"ws/.git/", "ws/a/b/c/d/.git/", deep, "ws/a/b/file"},
		roots: []string{"ws"},
		want:  []string{"ws/.git/", deep, "ws/a/b/c/d/.git/"},
	},
	{
		name:  "every metadata name and a Match of a file",
		tree:  []string{"ws/.hg/", "ws/x/.jj/", "ws/y/.svn/", "ws/z/secret.key", "ws/z/plain.txt"},
		roots: []string{"ws"},
		want:  []string{"ws/.hg/", "ws/x/.jj/", "ws/y/.svn/", "ws/z/secret.key"},
	},
	{
		name:  "only the topmost: a protected directory is not searched",
		tree:  []string{"ws/.git/modules/sub/.git/", "ws/.git/id.key"},
		roots: []string{"ws"},
		want:  []string{"ws/.git/"},
	},
	{
		name:  "a .git symlink to / is not returned",
		tree:  []string{"ws/.git->/", "ws/sub/.git->{base}/outside/.git", "outside/.git/"},
		roots: []string{"ws"},
		want:  []string{},
	},
	{
		name:  "a symlinked directory is not entered",
		tree:  []string{"ws/link->{base}/outside", "outside/.git/"},
		roots: []string{"ws"},
		want:  []string{},
	},
	{
		name:  "a .git FIFO is returned as a file, never read",
		tree:  []string{"ws/.git|", "ws/sub/.hg|"},
		roots: []string{"ws"},
		want:  []string{"ws/.git", "ws/sub/.hg"},
	},
	{
		name:  "a gitdir in another root",
		tree:  []string{"ws/.git=gitdir: {base}/store/repo.git\n", "store/repo.git/"},
		roots: []string{"ws", "store"},
		want:  []string{"store/repo.git/", "ws/.git"},
	},
	{
		name:  "a relative gitdir",
		tree:  []string{"ws/wt/.git=gitdir: ../main/.git/worktrees/wt\n", "ws/main/.git/worktrees/wt/"},
		roots: []string{"ws"},
		want:  []string{"ws/main/.git/", "ws/main/.git/worktrees/wt/", "ws/wt/.git"},
	},
	{
		name: "the gitdir's commondir is followed",
		tree: []string{
			"ws/wt/.git=gitdir: {base}/store/main.git/worktrees/wt\r\n",
			"store/main.git/worktrees/wt/commondir=../..\n",
		},
		roots: []string{"ws", "store"},
		want:  []string{"store/main.git/", "store/main.git/worktrees/wt/", "ws/wt/.git"},
	},
	{
		name:  "a commondir FIFO is not read",
		tree:  []string{"ws/.git=gitdir: gd", "ws/gd/commondir|"},
		roots: []string{"ws"},
		want:  []string{"ws/.git", "ws/gd/"},
	},
	{
		name:  "a gitdir outside every root is not returned",
		tree:  []string{"ws/.git=gitdir: {base}/outside/repo.git", "outside/repo.git/"},
		roots: []string{"ws"},
		want:  []string{"ws/.git"},
	},
	{
		name:  "a gitdir through a symlink is not followed",
		tree:  []string{"ws/.git=gitdir: {base}/ws/lnk/repo.git", "ws/lnk->{base}/ws/real", "ws/real/repo.git/"},
		roots: []string{"ws"},
		want:  []string{"ws/.git"},
	},
	{
		name:  "a gitdir that is a symlink is not returned",
		tree:  []string{"ws/.git=gitdir: {base}/ws/gd", "ws/gd->/", "ws/sub/.git=gitdir: {base}/ws/f", "ws/f|"},
		roots: []string{"ws"},
		want:  []string{"ws/.git", "ws/sub/.git"},
	},
	{
		name:  "a .git file without a gitdir line, or naming its root",
		tree:  []string{"ws/.git=ref: nothing\ngitdir: x\n", "ws/x/", "ws/sub/.git=gitdir: {base}/ws\n"},
		roots: []string{"ws"},
		want:  []string{"ws/.git", "ws/sub/.git"},
	},
	{
		name:  "a bare repository and a gitdir kept apart are protected whole by their shape; a lookalike is not",
		tree:  []string{"ws/remote.git/HEAD=ref: refs/heads/main\n", "ws/remote.git/objects/", "ws/remote.git/refs/", "ws/remote.git/hooks/x=y", "ws/wtdir/HEAD=x", "ws/wtdir/commondir=..\n", "ws/look/HEAD=x", "ws/look/refs/", "ws/src/a.go=x"},
		roots: []string{"ws"},
		want:  []string{"ws/remote.git/", "ws/wtdir/"},
	},
	{
		name:  "a gitdir that is another root itself (git init --separate-git-dir) is protected whole",
		tree:  []string{"ws/.git=gitdir: {base}/cache\n", "cache/HEAD=ref: refs/heads/main\n", "cache/objects/", "cache/refs/"},
		roots: []string{"ws", "cache"},
		want:  []string{"cache/", "ws/.git"},
	},
	{
		name:  "a gitdir path is read as git reads it: only trailing CR and LF cut",
		tree:  []string{"ws/wt/.git=gitdir: {base}/cache/gd \r\n", "cache/gd /HEAD=x", "cache/gd/HEAD=x"},
		roots: []string{"ws", "cache"},
		want:  []string{"cache/gd /", "ws/wt/.git"},
	},
	{
		name:  "nested roots list an entry once",
		tree:  []string{"ws/sub/.git/"},
		roots: []string{"ws", "ws/sub"},
		want:  []string{"ws/sub/.git/"},
	},
}

func TestScan_Finds(t *testing.T) {
	for _, tc := range findCases {
		t.Run(tc.name, func(t *testing.T) {
			base := tempRoot(t)
			tree := make([]string, len(tc.tree))
			for i, s := range tc.tree {
				tree[i] = strings.ReplaceAll(s, "{base}", base)
			}
			build(t, base, tree...)
			var roots []protectscan.Root
			for _, r := range tc.roots {
				roots = append(roots, protectscan.Root{Path: filepath.Join(base, r)})
			}
			got := scanWithin(t, protectscan.New(protectscan.Options{}), roots)
			var rels []string
			for _, e := range got {
				rel, err := filepath.Rel(base, e.Path)
				require.NoError(t, err)
				if e.Dir {
					rel += "/"
				}
				rels = append(rels, rel)
				dev, ino := identity(t, e.Path)
				assert.Equal(t, [2]uint64{dev, ino}, [2]uint64{e.Dev, e.Ino}, "identity of %s", rel)
			}
			assert.ElementsMatch(t, tc.want, rels)
		})
	}
}

// scanWithin scans roots with protectMeta and fails the test if the scan
// errs or does not return within hangLimit.
func scanWithin(t *testing.T, s *protectscan.Scanner, roots []protectscan.Root) []protectscan.Entry {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), hangLimit)
	defer cancel()
	type result struct {
		entries []protectscan.Entry
		err     error
	}
	done := make(chan result, 1)
	go func() {
		entries, err := s.Scan(ctx, roots, protectMeta)
		done <- result{entries, err}
	}()
	select {
	case r := <-done:
		require.NoError(t, r.err)
		return r.entries
	case <-time.After(hangLimit + time.Second):
		require.FailNow(t, "Scan hung")
		return nil
	}
}

func TestScan_Budget(t *testing.T) {
	base := tempRoot(t)
	build(t, base, "ws/zz/.git/")
	manyFiles(t, filepath.Join(base, "ws", "--"), 50_000)
	roots := []protectscan.Root{{Path: filepath.Join(base, "ws")}}

	cases := []struct {
		name       string
		maxEntries int
		wantDirs   []string // the directory the *BudgetError names is one of these; none = no error
	}{
		{name: "a budget large enough finds .git past 50,000 files", maxEntries: 0},
		{name: "exactly the entries in the tree", maxEntries: 50_000 + 3},
		{name: "a small budget refuses", maxEntries: 10_000, wantDirs: []string{filepath.Join(base, "ws", "--")}},
		{
			// The last entry read is in "--" or "zz", whichever is read second.
			name: "one entry short refuses", maxEntries: 50_000 + 2,
			wantDirs: []string{filepath.Join(base, "ws", "--"), filepath.Join(base, "ws", "zz")},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			entries, err := protectscan.New(protectscan.Options{MaxEntries: tc.maxEntries}).
				Scan(t.Context(), roots, protectMeta)
			if len(tc.wantDirs) == 0 {
				require.NoError(t, err)
				assert.Equal(t, []string{"ws/zz/.git"}, pathsOf(t, base, entries))
				return
			}
			var be *protectscan.BudgetError
			require.ErrorAs(t, err, &be)
			assert.Nil(t, entries, "never a partial list")
			assert.Contains(t, tc.wantDirs, be.Dir)
			assert.Equal(t, tc.maxEntries+1, be.Entries)
			assert.Zero(t, be.Depth)
			assert.Contains(t, err.Error(), be.Dir)
			assert.Contains(t, err.Error(), "refused")
		})
	}
}

func TestScan_Depth(t *testing.T) {
	base := tempRoot(t)
	build(t, base, "ws/a/b/c/.git/", "ws/x/")
	roots := []protectscan.Root{{Path: filepath.Join(base, "ws")}}
	cases := []struct {
		maxDepth int
		wantErr  string // the directory named; "" = found
	}{
		{maxDepth: 3},
		{maxDepth: 2, wantErr: filepath.Join(base, "ws/a/b/c")},
		{maxDepth: 1, wantErr: filepath.Join(base, "ws/a/b")},
	}
	for _, tc := range cases {
		entries, err := protectscan.New(protectscan.Options{MaxDepth: tc.maxDepth}).Scan(t.Context(), roots, protectMeta)
		if tc.wantErr == "" {
			require.NoError(t, err, "depth %d", tc.maxDepth)
			assert.Equal(t, []string{"ws/a/b/c/.git"}, pathsOf(t, base, entries))
			continue
		}
		var be *protectscan.BudgetError
		require.ErrorAs(t, err, &be, "depth %d", tc.maxDepth)
		assert.Nil(t, entries)
		assert.Equal(t, tc.maxDepth, be.Depth)
		assert.Equal(t, tc.wantErr, be.Dir)
		assert.Contains(t, err.Error(), "refused")
	}
}

func TestScan_Context(t *testing.T) {
	base := tempRoot(t)
	build(t, base, "ws/a/.git/")
	roots := []protectscan.Root{{Path: filepath.Join(base, "ws")}}

	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	expired, cancel2 := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"cancelled", cancelled, context.Canceled},
		{"past its deadline", expired, context.DeadlineExceeded},
	} {
		entries, err := protectscan.New(protectscan.Options{}).Scan(tc.ctx, roots, protectMeta)
		require.ErrorIs(t, err, tc.want, tc.name)
		assert.Nil(t, entries, tc.name)
		assert.Contains(t, err.Error(), filepath.Join(base, "ws"), tc.name)
	}
}

func TestScan_Errors(t *testing.T) {
	base := tempRoot(t)
	build(t, base, "ws/.git/", "link->ws")
	cases := []struct {
		name  string
		root  string
		match protectscan.Match
		want  error // nil: any error
	}{
		{name: "a relative root", root: "ws", match: protectMeta},
		{name: "an unclean root", root: base + "/ws/../ws", match: protectMeta},
		{name: "a missing root", root: base + "/missing", match: protectMeta, want: os.ErrNotExist},
		{name: "a root through a symlink", root: base + "/link", match: protectMeta},
		{name: "no match", root: base + "/ws"},
	}
	for _, tc := range cases {
		entries, err := protectscan.New(protectscan.Options{}).
			Scan(t.Context(), []protectscan.Root{{Path: tc.root}}, tc.match)
		require.Error(t, err, tc.name)
		if tc.want != nil {
			assert.ErrorIs(t, err, tc.want, tc.name)
		}
		assert.Nil(t, entries, tc.name)
		var be *protectscan.BudgetError
		assert.False(t, errors.As(err, &be), tc.name)
	}
}
