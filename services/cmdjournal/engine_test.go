package cmdjournal

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/journal"
	"github.com/dsh-go/harness/services/sandbox"
)

// secret is the bytes of the files the journal must never hold.
const secret = "TOPSECRET-5f3c9a"

// fixture is a workspace with files to overwrite, chmod and delete (a
// tree), a deny-read .env and a gitignored node_modules holding the secret.
func fixture(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "cmdjournal-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	ws := filepath.Join(base, "ws")
	files := map[string]string{
		"a.txt":                   "old a\n",
		"b.sh":                    "echo b\n",
		"keep.txt":                "unchanged\n",
		"tree/x":                  "x content\n",
		"tree/sub/y":              "y content\n",
		".env":                    "API_KEY=" + secret + "\n",
		".gitignore":              "node_modules/\n*.log\n",
		"node_modules/m/index.js": "module.exports = '" + secret + "'\n",
		"build.log":               secret + "\n",
	}
	for rel, content := range files {
		p := filepath.Join(ws, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	require.NoError(t, os.Chmod(filepath.Join(ws, "tree/sub"), 0o750))
	require.NoError(t, os.Symlink("a.txt", filepath.Join(ws, "tree/link")))
	return ws
}

// sh runs a command line in dir, as a command would.
func sh(t *testing.T, dir, line string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
}

// denyRead returns the default deny-read set.
func denyRead(t testing.TB) sandbox.DenyRead {
	t.Helper()
	d, err := sandbox.NewDenyRead(sandbox.DenyReadOptions{})
	require.NoError(t, err)
	return d
}

func byPath(nodes []journal.Node) map[string]journal.Node {
	m := map[string]journal.Node{}
	for _, n := range nodes {
		m[n.Path] = n
	}
	return m
}

func TestACommandsChangesAreJournaled(t *testing.T) {
	ws := fixture(t)
	st := newStore(t)
	j, err := New(Options{Journal: st, DenyRead: denyRead(t)})
	require.NoError(t, err)

	snap, err := j.Begin("", []string{ws})
	require.NoError(t, err)
	sh(t, ws, "printf 'new a\\n' > a.txt && chmod 0700 b.sh && rm -rf tree && mkdir made && printf 'n\\n' > made/n.txt"+
		" && printf 'API_KEY=other\\n' > .env && echo more >> node_modules/m/index.js && echo x > node_modules/new.js && echo l >> build.log")
	res, err := snap.End(Call{Session: "s1", Client: "c", Call: "7"})
	require.NoError(t, err)

	e := res.Entry
	require.NotEmpty(t, e.ID)
	assert.Equal(t, journal.Command, e.Kind)
	assert.Equal(t, "exec", e.Tool)
	assert.Equal(t, "s1", e.Session)
	assert.Equal(t, "7", e.Call)
	abs := func(rels ...string) []string {
		var out []string
		for _, r := range rels {
			out = append(out, filepath.Join(ws, r))
		}
		return out
	}
	// Exactly what the command changed, parents before children
	// (a tree created or deleted is listed by its top, its entries in
	// Before and After).
	assert.Equal(t, abs("a.txt", "b.sh", "made", "tree"), e.Paths)
	// .env (deny-read) changed, build.log and node_modules (gitignored) too: listed, not journaled.
	assert.Equal(t, abs(".env", "build.log", "node_modules"), res.NotJournaled)
	assert.Equal(t, res.NotJournaled, e.NotJournaled)
	assert.Equal(t, map[string]string{
		filepath.Join(ws, ".env"): skipDenyRead, filepath.Join(ws, "build.log"): skipGitignore,
		filepath.Join(ws, "node_modules"): skipGitignore,
	}, e.NotJournaledWhy)

	// The journal holds the entry as returned, applied.
	got, err := st.Get(e.ID)
	require.NoError(t, err)
	assert.Equal(t, journal.Applied, got.Status)
	assert.Equal(t, e.Paths, got.Paths)
	assert.Equal(t, e.Before, got.Before)
	assert.Equal(t, e.After, got.After)
	assert.True(t, got.Kept)

	before, after := byPath(e.Before), byPath(e.After)
	assert.Len(t, e.Before, 7) // a.txt, b.sh, and the tree's five
	assert.Len(t, e.After, 4)  // a.txt, b.sh, made, made/n.txt

	for rel, content := range map[string]string{"a.txt": "old a\n", "b.sh": "echo b\n", "tree/x": "x content\n", "tree/sub/y": "y content\n"} {
		n := before[filepath.Join(ws, rel)]
		assert.Equal(t, journal.File, n.Type, rel)
		assert.Equal(t, uint32(0o644), n.Mode, rel)
		assert.Equal(t, content, readBlob(t, st, n.Hash), rel)
	}
	assert.Equal(t, uint32(0o750), before[filepath.Join(ws, "tree/sub")].Mode)
	assert.Equal(t, journal.Dir, before[filepath.Join(ws, "tree")].Type)
	assert.Equal(t, "a.txt", before[filepath.Join(ws, "tree/link")].Link)

	// After: what is on disk now.
	for rel, want := range map[string]struct {
		typ     string
		mode    uint32
		content string
	}{
		"a.txt": {journal.File, 0o644, "new a\n"}, "b.sh": {journal.File, 0o700, "echo b\n"},
		"made": {journal.Dir, 0o755, ""}, "made/n.txt": {journal.File, 0o644, "n\n"},
	} {
		p := filepath.Join(ws, rel)
		n := after[p]
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		assert.Equal(t, want.typ, n.Type, rel)
		assert.Equal(t, uint32(fi.Mode().Perm()), n.Mode, rel)
		if want.typ == journal.File {
			disk, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.Equal(t, want.content, string(disk), rel)
			assert.Equal(t, string(disk), readBlob(t, st, n.Hash), rel)
		}
	}

	// A second command that changes nothing records nothing.
	snap, err = j.Begin("", []string{ws})
	require.NoError(t, err)
	assert.Zero(t, snap.Bytes, "nothing changed since the last walk: nothing stored")
	res, err = snap.End(Call{Session: "s1"})
	require.NoError(t, err)
	assert.Empty(t, res.Entry.ID)

	assertNoSecret(t, st)
}
