//go:build linux

package journal_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/journal"
)

func open(t *testing.T, dir string, maxBytes, segBytes int64) *journal.Journal {
	t.Helper()
	j, err := journal.Open(journal.Options{Dir: dir, MaxBytes: maxBytes, SegmentBytes: segBytes, Sync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	return j
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

func parentOf(t *testing.T, dir string) *dirfd.Parent {
	t.Helper()
	root, err := dirfd.OpenBeneath(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = root.Close() })
	p, _, err := root.OpenParent("", false)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func readBlob(t *testing.T, j *journal.Journal, hash string) []byte {
	t.Helper()
	r, n, err := j.OpenBlob(hash)
	require.NoError(t, err)
	defer r.Close() //nolint:errcheck // test
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Len(t, b, int(n))
	return b
}

// A captured file keeps its bytes, mode, owner and mtime; Commit, Finish
// and List agree; the files are private.
func TestCaptureFileRoundTrip(t *testing.T) {
	work, state := t.TempDir(), filepath.Join(t.TempDir(), "journal")
	content := []byte("hello\x00world\n")
	require.NoError(t, os.WriteFile(filepath.Join(work, "a"), content, 0o640))
	j := open(t, state, 1<<20, 0)
	tx, err := j.Begin(journal.Entry{Session: "s1", Tool: "write", Kind: journal.Write, Paths: []string{filepath.Join(work, "a")}})
	require.NoError(t, err)
	nodes, err := tx.Capture(parentOf(t, work), "a", filepath.Join(work, "a"))
	require.NoError(t, err)
	e, err := tx.Commit()
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	assert.Equal(t, sum(content), nodes[0].Hash)
	assert.Equal(t, uint32(0o640), nodes[0].Mode)
	assert.Equal(t, uint32(os.Getuid()), nodes[0].UID)
	assert.Equal(t, journal.Pending, e.Status)
	assert.True(t, e.Kept)
	require.NoError(t, j.Finish(e.ID, journal.Applied, nil))
	got, err := j.Get(e.ID)
	require.NoError(t, err)
	assert.Equal(t, journal.Applied, got.Status)
	assert.Equal(t, content, readBlob(t, j, nodes[0].Hash))
	st, err := os.Stat(state)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	st, err = os.Stat(filepath.Join(state, "seg-000001"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}
