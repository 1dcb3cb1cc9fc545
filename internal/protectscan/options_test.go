//go:build linux

package protectscan_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/protectscan"
)

// protectEnv is the deny-read walk's kind of Match: a `.env` at any depth,
// never the version-control names.
func protectEnv(rel string, _ bool) bool { return filepath.Base(rel) == ".env" }

// TestScan_EnterRepositories: a directory given a repository's shape (HEAD,
// objects/, refs/) is returned whole and not searched by default, and
// searched like any other with EnterRepositories, bare or as a `.git`.
func TestScan_EnterRepositories(t *testing.T) {
	base := tempRoot(t)
	build(t, base, "ws/backend/.env=1", "ws/backend/HEAD=ref: refs/heads/main", "ws/backend/objects/", "ws/backend/refs/",
		"ws/backend/deeper/.env=2", "ws/.git/HEAD=x", "ws/.git/objects/", "ws/.git/refs/", "ws/.git/x/.env=3")
	roots := []protectscan.Root{{Path: filepath.Join(base, "ws")}}
	for _, c := range []struct {
		name  string
		enter bool
		want  []string
	}{
		{"by default", false, []string{"ws/.git", "ws/backend"}},
		{"entering them", true, []string{"ws/.git/x/.env", "ws/backend/.env", "ws/backend/deeper/.env"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := protectscan.New(protectscan.Options{EnterRepositories: c.enter}).Scan(t.Context(), roots, protectEnv)
			require.NoError(t, err)
			assert.Equal(t, c.want, pathsOf(t, base, got))
		})
	}
}
