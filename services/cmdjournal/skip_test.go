package cmdjournal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/journal"
)

// newCappedStore is newStore with a cap of maxBytes.
func newCappedStore(t *testing.T, maxBytes int64) *journal.Journal {
	t.Helper()
	j, err := journal.Open(journal.Options{Dir: filepath.Join(t.TempDir(), "journal"), MaxBytes: maxBytes, Sync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	return j
}

// workspace makes a workspace under /var/tmp holding files (relative
// path: content).
func workspace(t *testing.T, files map[string]string) string {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "cmdjournal-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	ws := filepath.Join(base, "ws")
	for rel, content := range files {
		p := filepath.Join(ws, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return ws
}

// sparse makes the file p of size bytes, all a hole.
func sparse(t *testing.T, p string, size int64) {
	t.Helper()
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	require.NoError(t, os.Truncate(p, size))
}

// reads records the size of each content a walk reads (its content
// function sees a descriptor and a size).
type reads struct{ sizes []int64 }

func (r *reads) content(_ int, size int64) (string, error) {
	r.sizes = append(r.sizes, size)
	return "sha256:test", nil
}

// A file over the journal's cap (a 100 GiB sparse file) is never read,
// not by the first walk and not by any later one while its stat holds;
// the files beside it are journaled as usual, and its own change is
// listed not journaled, with the reason.
func TestOverCapFileIsSkipped(t *testing.T) {
	ws := workspace(t, map[string]string{"b": "bee\n", "d/e": "eee\n", "keep": "keep\n"})
	sparse(t, filepath.Join(ws, "big"), 100<<30)
	st := newCappedStore(t, 1<<20)
	j, err := New(Options{Journal: st, DenyRead: denyRead(t)})
	require.NoError(t, err)

	// The walk reads the three small files, never big.
	r := &reads{}
	m, err := walk(ws, nil, j.scope, r.content)
	require.NoError(t, err)
	assert.ElementsMatch(t, []int64{4, 4, 5}, r.sizes)
	assert.Equal(t, skipTooLarge, m.skipped["big"].why)
	assert.NotContains(t, m.entries, "big")
	// A later walk over the same stats reads nothing (m is not racy
	// once its changes are older than the racy window).
	m.start += 2 * racyWindow
	r2 := &reads{}
	_, err = walk(ws, m, j.scope, r2.content)
	require.NoError(t, err)
	assert.Empty(t, r2.sizes, "nothing is read again while its stat holds")

	snap, err := j.Begin("", []string{ws})
	require.NoError(t, err)
	sh(t, ws, "rm -rf b d big")
	res, err := snap.End(Call{Session: "s"})
	require.NoError(t, err)
	e := res.Entry
	require.NotEmpty(t, e.ID, "the command is journaled")
	assert.True(t, e.Kept)
	assert.Equal(t, []string{filepath.Join(ws, "b"), filepath.Join(ws, "d")}, e.Paths)
	before := byPath(e.Before)
	assert.Equal(t, "bee\n", readBlob(t, st, before[filepath.Join(ws, "b")].Hash))
	assert.Equal(t, "eee\n", readBlob(t, st, before[filepath.Join(ws, "d/e")].Hash))
	assert.Equal(t, []string{filepath.Join(ws, "big")}, e.NotJournaled)
	assert.Equal(t, map[string]string{filepath.Join(ws, "big"): skipTooLarge}, e.NotJournaledWhy)
	assert.Equal(t, e.ID+"; 1 changed path(s) not journaled (over the journal cap)", Describe(res))
	got, err := st.Get(e.ID)
	require.NoError(t, err)
	assert.Equal(t, e.NotJournaledWhy, got.NotJournaledWhy)
}

// Files each under the cap but together over it do not make one another
// not kept: the snapshot keeps them in several transactions (the journal
// then drops its oldest segments to stay within its cap), and a command
// removing the last one read is journaled with its content.
func TestSnapshotOverCapInTotal(t *testing.T) {
	files := map[string]string{
		"a": strings.Repeat("a", 900<<10),
		"b": strings.Repeat("b", 200<<10),
	}
	ws := workspace(t, files)
	st := newCappedStore(t, 1<<20) // segments of 128 KiB: a and b land in two
	// Past the racy window: the walk after the command does not read a
	// again (which would push b's segment out).
	time.Sleep(time.Duration(2 * racyWindow))
	j, err := New(Options{Journal: st, DenyRead: denyRead(t)})
	require.NoError(t, err)
	snap, err := j.Begin("", []string{ws})
	require.NoError(t, err)
	sh(t, ws, "rm b")
	res, err := snap.End(Call{Session: "s"})
	require.NoError(t, err)
	e := res.Entry
	require.NotEmpty(t, e.ID)
	assert.True(t, e.Kept)
	assert.Equal(t, []string{filepath.Join(ws, "b")}, e.Paths)
	require.Len(t, e.Before, 1)
	assert.Equal(t, files["b"], readBlob(t, st, e.Before[0].Hash))
}

// Credential files inside the workspace, at any depth, are never read:
// none of their bytes reaches the journal; their changes are listed not
// journaled, with the reason; the command's other changes are journaled.
func TestCredentialNamesAreSkipped(t *testing.T) {
	creds := []string{
		"d/.ssh/id_rsa", "d/.aws/credentials", ".npmrc", "sub/.netrc", "x.pem", "k/server.key",
		".git-credentials", "p/.pypirc", "d/.docker/config.json", ".cargo/credentials.toml",
		"e/.config/gcloud/token", ".kube/config", "e/.gnupg/key",
	}
	files := map[string]string{"a.txt": "old a\n"}
	for _, c := range creds {
		files[c] = "KEY=" + secret + "\n"
	}
	ws := workspace(t, files)
	st := newStore(t)
	j, err := New(Options{Journal: st, DenyRead: denyRead(t)})
	require.NoError(t, err)
	snap, err := j.Begin("", []string{ws})
	require.NoError(t, err)
	sh(t, ws, "printf 'new a\\n' > a.txt && rm -rf d .npmrc sub/.netrc x.pem k .git-credentials p .cargo e .kube")
	res, err := snap.End(Call{Session: "s"})
	require.NoError(t, err)
	e := res.Entry
	require.NotEmpty(t, e.ID)
	for _, p := range e.Paths {
		assert.NotContains(t, []string{".ssh", ".aws", ".docker", ".gnupg", ".config"}, filepath.Base(p))
	}
	assert.Equal(t, "old a\n", readBlob(t, st, byPath(e.Before)[filepath.Join(ws, "a.txt")].Hash))
	want := map[string]string{}
	for _, rel := range []string{
		"d/.ssh", "d/.aws", ".npmrc", "sub/.netrc", "x.pem", "k/server.key", ".git-credentials",
		"p/.pypirc", "d/.docker/config.json", ".cargo/credentials.toml", "e/.config/gcloud", ".kube", "e/.gnupg",
	} {
		want[filepath.Join(ws, rel)] = skipSecret
	}
	assert.Equal(t, want, e.NotJournaledWhy)
	assertNoSecret(t, st)
}
