package cmdjournal

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWhatACommandChanged: each kind of change a command makes, the paths
// its entry lists and the paths listed as not journaled (relative to the
// workspace root).
func TestWhatACommandChanged(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command string
		paths   []string
		skipped []string
	}{
		{"same-size overwrite at once (same clock tick)", "printf 'OLD A\\n' > a.txt", []string{"a.txt"}, nil},
		{"append", "echo more >> a.txt", []string{"a.txt"}, nil},
		{"create in a new directory", "mkdir -p n/m && touch n/m/f", []string{"n", "n/m", "n/m/f"}, nil},
		{"delete a file", "rm a.txt", []string{"a.txt"}, nil},
		{"delete a tree", "rm -rf tree", []string{"tree", "tree/link", "tree/sub", "tree/sub/y", "tree/x"}, nil},
		{"chmod a file", "chmod 0600 a.txt", []string{"a.txt"}, nil},
		{"chmod a directory", "chmod 0700 tree", []string{"tree"}, nil},
		{"retarget a symlink", "ln -sfn b.sh tree/link", []string{"tree/link"}, nil},
		{"a file becomes a directory", "rm a.txt && mkdir a.txt", []string{"a.txt"}, nil},
		{"rename", "mv a.txt c.txt", []string{"a.txt", "c.txt"}, nil},
		{"touch changes no content", "touch a.txt", nil, nil},
		{"move into a gitignored directory", "mv a.txt node_modules/", []string{"a.txt"}, []string{"node_modules"}},
		{"a gitignored file", "echo x >> build.log", nil, []string{"build.log"}},
		{"a new gitignored file", "echo x > new.log", nil, []string{"new.log"}},
		{"the deny-read .env", "echo x >> .env", nil, []string{".env"}},
		{"a new .env.local (a directory's times do not count)", "echo x > tree/.env.local", nil, []string{"tree/.env.local"}},
		{"git's own directory", "mkdir .git && touch .git/HEAD", nil, []string{".git"}},
		{"a gitignore that newly ignores", "echo 'tree/' >> .gitignore", []string{".gitignore"}, []string{"tree"}},
		{"nothing", "true", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := fixture(t)
			require.NoError(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("old a\n"), 0o644))
			st := newStore(t)
			j, err := New(Options{Journal: st, DenyRead: denyRead(t)})
			require.NoError(t, err)
			snap, err := j.Begin([]string{ws})
			require.NoError(t, err)
			sh(t, ws, tc.command)
			res, err := snap.End(Call{Session: "s"})
			require.NoError(t, err)
			abs := func(rels []string) []string {
				var out []string
				for _, r := range rels {
					out = append(out, filepath.Join(ws, r))
				}
				return out
			}
			assert.Equal(t, abs(tc.paths), res.Entry.Paths)
			assert.Equal(t, abs(tc.skipped), res.NotJournaled)
			if tc.paths == nil {
				assert.Empty(t, res.Entry.ID, "no change in scope: no entry")
			}
			assertNoSecret(t, st)
		})
	}
}
