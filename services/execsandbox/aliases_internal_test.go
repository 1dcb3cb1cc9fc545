//go:build linux

package execsandbox

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// BenchmarkWithAliases is what looking for protected files' other names
// costs a command when none has any (the common case): a workspace whose
// repository has its config and HEAD found, and a home out of the roots
// with its host-run files.
func BenchmarkWithAliases(b *testing.B) {
	ws, home := b.TempDir(), b.TempDir()
	var entries []sandboxpolicy.ProtectedEntry
	for _, n := range []string{".git/config", ".git/info/attributes", ".envrc"} {
		p := filepath.Join(ws, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			b.Fatal(err)
		}
		entries = append(entries, sandboxpolicy.ProtectedEntry{Path: p, Dev: uint64(st.Dev), Ino: st.Ino}) //nolint:unconvert // Dev is uint64 on most arches only
	}
	for _, n := range []string{".bashrc", ".profile", ".gitconfig"} {
		if err := os.WriteFile(filepath.Join(home, n), []byte("x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	roots := []string{ws}
	outside := homeFilesOutside([]string{home}, sandbox.HostRunFiles(), roots)
	var c aliasCache
	for b.Loop() {
		out, err := c.withAliases(b.Context(), roots, entries, outside)
		if err != nil || len(out) != len(entries) {
			b.Fatal(err, len(out))
		}
	}
}
