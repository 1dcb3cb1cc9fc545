//go:build linux

package fssandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// BenchmarkIdentitySnapshot takes the read fence's identity snapshot of the
// deny-read set afresh each time (a new fence, as every identityTTL): the
// defaults over a fixture home holding ~/.ssh with one key ("defaults"),
// and with `--deny-read <tree>/**/*.pem` added over a tree of 45,000
// entries ("anchored-glob-45k").
func BenchmarkIdentitySnapshot(b *testing.B) {
	base, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	home, tree := filepath.Join(base, "home"), filepath.Join(base, "tree")
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("key\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	for d := range 450 {
		dir := filepath.Join(tree, "d"+strconv.Itoa(d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 99 {
			if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(f)+".txt"), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		deny []string
	}{
		{"defaults", nil},
		{"anchored-glob-45k", []string{tree + "/**/*.pem"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			policy, err := sandboxpolicy.New(sandboxpolicy.Config{
				Mode: sandbox.WorkspaceWrite, WorkspaceRoot: base, TempRoots: []string{}, Homes: []string{home}, DenyRead: tc.deny,
			})
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				if newReadFence(policy).identities() == nil {
					b.Fatal("no snapshot")
				}
			}
		})
	}
}
