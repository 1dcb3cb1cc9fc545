package cmdjournal

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/journal"
)

// newStore opens a journal in a fresh directory (durability full).
func newStore(t testing.TB) *journal.Journal {
	t.Helper()
	j, err := journal.Open(journal.Options{Dir: filepath.Join(t.TempDir(), "journal"), MaxBytes: 1 << 30, Sync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	return j
}

// readBlob returns the content the journal holds under hash.
func readBlob(t *testing.T, j *journal.Journal, hash string) string {
	t.Helper()
	rc, _, err := j.OpenBlob(hash)
	require.NoError(t, err, hash)
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return string(b)
}

// assertNoSecret checks that no file of the journal's directory holds the
// secret's bytes.
func assertNoSecret(t *testing.T, j *journal.Journal) {
	t.Helper()
	names, err := os.ReadDir(j.Dir())
	require.NoError(t, err)
	require.NotEmpty(t, names)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(j.Dir(), n.Name()))
		require.NoError(t, err)
		assert.False(t, strings.Contains(string(b), secret), "the journal file %s holds the secret", n.Name())
	}
}
