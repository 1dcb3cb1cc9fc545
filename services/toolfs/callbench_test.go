//go:build linux

package toolfs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/readbeforewrite"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/toolfs"
)

// BenchmarkToolCall is one tool call as `harness serve` makes it, without
// the protocol: the fence under workspace-write (Landlock where the kernel
// has it), the read-before-write policy, a 1 KiB file, at each durability
// level. It is the in-process part of the side-by-side `make bench`
// figures; profile it with -cpuprofile.
//
//	go test -run '^$' -bench ToolCall -benchtime 2000x -count 3 ./services/toolfs/
func BenchmarkToolCall(b *testing.B) {
	owners := []bool{false}
	if os.Geteuid() == 0 {
		// A root server in a workspace of another user: the file tools act
		// as that user (fslocal.Config.NewOwner).
		owners = append(owners, true)
	}
	for _, owned := range owners {
		prefix := ""
		if owned {
			prefix = "owner/"
		}
		b.Run(prefix+"read", func(b *testing.B) {
			e, sess, dp := benchTools(b, fslocal.DurabilityFull, owned)
			args, read := map[string]any{"file_path": dp}, e.Read()
			b.ResetTimer()
			for range b.N {
				require.False(b, wrCall(b, read, sess, args).IsError)
			}
		})
		for _, durability := range []fslocal.Durability{fslocal.DurabilityFull, fslocal.DurabilityAtomic} {
			b.Run(prefix+"overwrite/"+string(durability), func(b *testing.B) {
				e, sess, dp := benchTools(b, durability, owned)
				write := e.Write()
				b.ResetTimer()
				for i := range b.N {
					args := map[string]any{"file_path": dp, "content": benchContent(i + 1)}
					require.False(b, wrCall(b, write, sess, args).IsError)
				}
			})
			b.Run(prefix+"edit/"+string(durability), func(b *testing.B) {
				e, sess, dp := benchTools(b, durability, owned)
				edit := e.Edit()
				b.ResetTimer()
				for i := range b.N {
					args := map[string]any{"file_path": dp, "old_string": benchLine(i), "new_string": benchLine(i + 1)}
					require.False(b, wrCall(b, edit, sess, args).IsError)
				}
			})
		}
	}
}

// benchLine is the first line of benchContent(i).
func benchLine(i int) string { return fmt.Sprintf("version %010d", i) }

// benchContent is 1 KiB of text starting with benchLine(i).
func benchContent(i int) string {
	head := benchLine(i) + "\n"
	return head + strings.Repeat("x", 1023-len(head)) + "\n"
}

// benchTools composes the tools over the fence in a fresh workspace holding
// f.txt (benchContent(0)), read once by the returned session. With owned
// (a server running as root), the workspace and f.txt belong to uid 1001
// and the backend takes that owner (fslocal.RootOwner).
func benchTools(b testing.TB, durability fslocal.Durability, owned bool) (*toolfs.Tools, *session.Session, string) {
	b.Helper()
	base, err := filepath.EvalSymlinks(b.TempDir())
	require.NoError(b, err)
	ws := filepath.Join(base, "ws")
	dp := wrPut(b, filepath.Join(ws, "f.txt"), benchContent(0))
	var owner *fslocal.Owner
	if owned {
		for _, d := range []string{filepath.Dir(base), base} { // the test's temp directories are 0700
			require.NoError(b, os.Chmod(d, 0o755))
		}
		for _, p := range []string{ws, dp} {
			require.NoError(b, os.Chown(p, 1001, 1001))
		}
		owner, err = fslocal.RootOwner(ws)
		require.NoError(b, err)
	}
	policy, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws, TempRoots: []string{}})
	require.NoError(b, err)
	backend, err := fssandbox.New(policy, fslocal.Config{Cwd: ws, Durability: durability, NewOwner: owner}, fssandbox.Config{}, nil)
	require.NoError(b, err)
	b.Cleanup(func() { _ = backend.Close() })
	rbw := readbeforewrite.New()
	tools, err := toolfs.New(toolfs.Config{}, toolfs.Deps{FS: backend, Policy: policy, Intents: rbw, Observers: []fs.Observer{rbw}})
	require.NoError(b, err)
	sess := session.New("bench", ws)
	require.False(b, wrCall(b, tools.Read(), sess, map[string]any{"file_path": dp}).IsError)
	return tools, sess, dp
}
