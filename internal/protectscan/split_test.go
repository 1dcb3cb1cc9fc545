//go:build linux

package protectscan_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/protectscan"
)

// repo is a git directory shaped like a repository at dir, with a config
// and a hooks directory.
func repo(dir string) []string {
	return []string{dir + "/HEAD=ref: refs/heads/main\n", dir + "/objects/", dir + "/refs/heads/", dir + "/config=c\n", dir + "/hooks/"}
}

// TestSplitGit: with SplitGit, a git directory shaped like a repository is
// listed Split with its read-only members: those that exist, the missing
// ones a command must not create (where their parent exists; a commondir's
// placeholder holds "."), and those of the gitdirs in worktrees/ and
// modules/ (a submodule's name may hold slashes); one not shaped like a
// repository, or with a symlinked member, stays whole.
func TestSplitGit(t *testing.T) {
	type want struct {
		kind        string // "split", "bound", "missing"
		placeholder string
	}
	cases := []struct {
		name string
		tree []string
		want map[string]want // relative to ws
	}{
		{
			name: "a .git with config, hooks, info and objects/info",
			tree: append(repo("ws/.git"), "ws/.git/info/exclude=x\n", "ws/.git/objects/info/"),
			want: map[string]want{
				".git": {kind: "split"}, ".git/config": {kind: "bound"}, ".git/hooks": {kind: "bound"},
				".git/config.worktree": {kind: "missing"}, ".git/info/attributes": {kind: "missing"},
				".git/objects/info/alternates": {kind: "missing"}, ".git/commondir": {kind: "missing", placeholder: ".\n"},
			},
		},
		{
			name: "a linked worktree's gitdir and a submodule named with a slash",
			tree: append(append(repo("ws/.git"),
				"ws/.git/worktrees/wt/HEAD=ref: refs/heads/wt\n", "ws/.git/worktrees/wt/commondir=../..\n", "ws/.git/worktrees/wt/gitdir=/x/.git\n"),
				repo("ws/.git/modules/libs/a")...),
			want: map[string]want{
				".git": {kind: "split"}, ".git/config": {kind: "bound"}, ".git/hooks": {kind: "bound"},
				".git/config.worktree": {kind: "missing"}, ".git/commondir": {kind: "missing", placeholder: ".\n"},
				".git/worktrees/wt": {kind: "split"}, ".git/worktrees/wt/commondir": {kind: "bound", placeholder: ".\n"},
				".git/worktrees/wt/gitdir": {kind: "bound"}, ".git/worktrees/wt/config.worktree": {kind: "missing"},
				".git/modules/libs/a": {kind: "split"}, ".git/modules/libs/a/config": {kind: "bound"},
				".git/modules/libs/a/hooks": {kind: "bound"}, ".git/modules/libs/a/config.worktree": {kind: "missing"},
				".git/modules/libs/a/commondir": {kind: "missing", placeholder: ".\n"},
			},
		},
		{
			name: "a bare repository is split too",
			tree: repo("ws/proj.git"),
			want: map[string]want{
				"proj.git": {kind: "split"}, "proj.git/config": {kind: "bound"}, "proj.git/hooks": {kind: "bound"},
				"proj.git/config.worktree": {kind: "missing"}, "proj.git/commondir": {kind: "missing", placeholder: ".\n"},
			},
		},
		{
			name: "a .git not shaped like a repository stays whole",
			tree: []string{"ws/.git/config=c\n", "ws/.git/hooks/"},
			want: map[string]want{".git": {kind: "bound"}},
		},
		{
			name: "a symlinked hooks directory keeps the .git whole",
			tree: append(repo("ws/other"), "ws/.git/HEAD=ref: refs/heads/main\n", "ws/.git/objects/", "ws/.git/refs/", "ws/.git/config=c\n", "ws/.git/hooks->../evil"),
			want: map[string]want{
				".git":  {kind: "bound"},
				"other": {kind: "split"}, "other/config": {kind: "bound"}, "other/hooks": {kind: "bound"},
				"other/config.worktree": {kind: "missing"}, "other/commondir": {kind: "missing", placeholder: ".\n"},
			},
		},
		{
			name: "what a symlinked member links to in the tree is protected too",
			tree: []string{
				"ws/.git/HEAD=ref: refs/heads/main\n", "ws/.git/objects/", "ws/.git/refs/", "ws/.git/config=c\n",
				"ws/.git/hooks->../githooks", "ws/githooks/", "ws/.git/info/attributes->../../attrs", "ws/attrs=x\n",
			},
			want: map[string]want{".git": {kind: "bound"}, "githooks": {kind: "bound"}, "attrs": {kind: "bound"}},
		},
		{
			name: "a member linked to the root itself protects nothing more (the root would be read-only)",
			tree: append(repo("ws/sub/.git"), "ws/sub/.git/info/attributes->../../.."),
			want: map[string]want{"sub/.git": {kind: "bound"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := tempRoot(t)
			build(t, base, c.tree...)
			ws := filepath.Join(base, "ws")
			entries, err := protectscan.New(protectscan.Options{SplitGit: true}).Scan(context.Background(), []protectscan.Root{{Path: ws}}, protectMeta)
			require.NoError(t, err)
			got := map[string]want{}
			for _, e := range entries {
				w := want{kind: "bound", placeholder: e.Placeholder}
				switch {
				case e.Split:
					w.kind = "split"
				case e.Missing:
					w.kind = "missing"
					assert.Zero(t, e.Ino, e.Path)
				}
				got[strings.TrimPrefix(e.Path, ws+"/")] = w
			}
			assert.Equal(t, c.want, got)
			for _, e := range entries {
				linked := strings.HasSuffix(e.Path, "/githooks") || strings.HasSuffix(e.Path, "/attrs")
				assert.Equal(t, linked, e.Via != "", "%s: Via %q", e.Path, e.Via)
			}

			// Without SplitGit each git directory is one entry.
			whole, err := protectscan.New(protectscan.Options{}).Scan(context.Background(), []protectscan.Root{{Path: ws}}, protectMeta)
			require.NoError(t, err)
			for _, e := range whole {
				assert.False(t, e.Split || e.Missing, e.Path)
			}
		})
	}
}
