package cmdjournal

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/journal"
)

type memStore struct {
	mu    sync.Mutex
	blobs map[string][]byte
	ents  []journal.Entry
}

func newStore(t *testing.T) *memStore { return &memStore{blobs: map[string][]byte{}} }

func (m *memStore) Put(fd int, size int64) (string, int64, error) {
	b, err := io.ReadAll(os.NewFile(uintptr(fd), ""))
	if err != nil {
		return "", 0, err
	}
	sum := sha256.Sum256(b)
	h := "sha256:" + hex.EncodeToString(sum[:])
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.blobs[h]; ok {
		return h, 0, nil
	}
	m.blobs[h] = b
	return h, int64(len(b)), nil
}

func (m *memStore) RecordCommand(e journal.Entry) (journal.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.ID = "e" + strconv.Itoa(len(m.ents)+1)
	e.Status = journal.Applied
	m.ents = append(m.ents, e)
	return e, nil
}

func readBlob(t *testing.T, m *memStore, h string) string {
	t.Helper()
	b, ok := m.blobs[h]
	require.True(t, ok, h)
	return string(b)
}

func assertNoSecret(t *testing.T, m *memStore) {
	for h, b := range m.blobs {
		assert.False(t, strings.Contains(string(b), secret), h)
	}
}
