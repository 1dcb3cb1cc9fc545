package cmdjournal

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/journal"
	"github.com/dsh-go/harness/services/undo"
)

// TestWhatACommandChanged: each kind of change a command makes, the paths
// its entry lists and the paths listed as not journaled (relative to the
// workspace root); undo of the entry puts back every entry in scope, its
// type, mode, bytes or target.
func TestWhatACommandChanged(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command string
		paths   []string
		skipped []string
	}{
		{"same-size overwrite at once (same clock tick)", "printf 'OLD A\\n' > a.txt", []string{"a.txt"}, nil},
		{"append", "echo more >> a.txt", []string{"a.txt"}, nil},
		{"create in a new directory", "mkdir -p n/m && touch n/m/f", []string{"n"}, nil},
		{"delete a file", "rm a.txt", []string{"a.txt"}, nil},
		{"delete a tree", "rm -rf tree", []string{"tree"}, nil},
		{"chmod a directory and delete beneath it", "chmod 0700 tree && rm tree/x && mkdir tree/sub/new", []string{"tree", "tree/sub/new", "tree/x"}, nil},
		{"a directory becomes a file", "rm -rf tree && echo t > tree", []string{"tree"}, nil},
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
			was := inScope(t, ws)
			snap, err := j.Begin("", []string{ws})
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
			} else {
				// Undo puts back exactly what was in scope.
				_, err := undo.New(st).Undo(t.Context(), res.Entry.ID, undo.Options{})
				require.NoError(t, err)
				assert.Equal(t, was, inScope(t, ws))
			}
			assertNoSecret(t, st)
		})
	}
}

// inScope describes every entry of ws a snapshot covers (not .git,
// node_modules, *.log, .env*): type, mode, and content or target.
func inScope(t *testing.T, ws string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if name == ".git" || name == "node_modules" || strings.HasSuffix(name, ".log") || strings.HasPrefix(name, ".env") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += " " + string(b)
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		}
		out[p] = desc
		return nil
	}))
	return out
}

// TestTheJournalInsideTheWorkspaceIsNotWalked: a journal whose directory
// lies inside a workspace root is never read into itself: the snapshot's
// own appends to it are not a change of the command's.
func TestTheJournalInsideTheWorkspaceIsNotWalked(t *testing.T) {
	ws := fixture(t)
	st, err := journal.Open(journal.Options{Dir: filepath.Join(ws, "state", "journal"), MaxBytes: 1 << 30, Sync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	j, err := New(Options{Journal: st, DenyRead: denyRead(t)})
	require.NoError(t, err)
	snap, err := j.Begin("", []string{ws})
	require.NoError(t, err)
	sh(t, ws, "echo more >> a.txt")
	res, err := snap.End(Call{Session: "s"})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(ws, "a.txt")}, res.Entry.Paths)
	assert.Empty(t, res.NotJournaled)
}

// TestContentTheJournalLostIsReadAgain: a file whose content the journal
// no longer holds (its segment dropped to the cap; here a key it never
// held) is read again by the next snapshot though its stat did not move,
// so the entry of a command that then changes it can be undone.
func TestContentTheJournalLostIsReadAgain(t *testing.T) {
	ws := fixture(t)
	st := newStore(t)
	j, err := New(Options{Journal: st, DenyRead: denyRead(t)})
	require.NoError(t, err)
	time.Sleep(time.Duration(2 * racyWindow)) // the fixture's stats are then trusted
	_, err = j.Begin("", []string{ws})
	require.NoError(t, err)
	lost := "sha256:" + strings.Repeat("0", 64)
	j.root(ws).last.entries["b.sh"].hash = lost

	snap, err := j.Begin("", []string{ws})
	require.NoError(t, err)
	sh(t, ws, "echo changed > b.sh")
	res, err := snap.End(Call{Session: "s"})
	require.NoError(t, err)
	require.Len(t, res.Entry.Before, 1)
	assert.NotEqual(t, lost, res.Entry.Before[0].Hash)
	assert.Equal(t, "echo b\n", readBlob(t, st, res.Entry.Before[0].Hash))
}
