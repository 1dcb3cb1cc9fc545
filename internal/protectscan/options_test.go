package protectscan_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// TestScan_FailVanished: a directory listed, then renamed before the scan
// reaches it (by the Match, while it reads its sibling), is skipped by
// default and fails the scan with a *VanishedError naming it with
// FailVanished; an unchanged tree scans the same either way.
func TestScan_FailVanished(t *testing.T) {
	for _, tc := range []struct {
		name         string
		fail, shared bool
	}{{"skipped", false, false}, {"failed", true, false}, {"skipped in a shared root", true, true}} {
		fail := tc.fail && !tc.shared
		t.Run(tc.name, func(t *testing.T) {
			base := tempRoot(t)
			build(t, base, "ws/a/x", "ws/b/x", "ws/a/.env=1", "ws/b/.env=2")
			ws := filepath.Join(base, "ws")
			roots := []protectscan.Root{{Path: ws, Shared: tc.shared, Owner: os.Geteuid()}}
			got, err := protectscan.New(protectscan.Options{FailVanished: tc.fail}).Scan(t.Context(), roots, protectEnv)
			require.NoError(t, err)
			assert.Equal(t, []string{"ws/a/.env", "ws/b/.env"}, pathsOf(t, base, got))
			// A fresh scanner (no cache): the first of the two read
			// renames the other away.
			moved := ""
			renaming := func(rel string, isDir bool) bool {
				if moved == "" && strings.HasSuffix(rel, "/x") {
					other := map[string]string{"a/x": "b", "b/x": "a"}[rel]
					moved = filepath.Join(ws, other)
					require.NoError(t, os.Rename(moved, moved+"-moved"))
				}
				return protectEnv(rel, isDir)
			}
			got, err = protectscan.New(protectscan.Options{FailVanished: tc.fail}).Scan(t.Context(), roots, renaming)
			require.NotEmpty(t, moved)
			if !fail {
				require.NoError(t, err)
				assert.Len(t, got, 1, "the renamed directory's .env is not seen")
				return
			}
			var ve *protectscan.VanishedError
			require.True(t, errors.As(err, &ve), "%v", err)
			assert.Equal(t, moved, ve.Path)
			assert.Empty(t, got)
		})
	}
}
