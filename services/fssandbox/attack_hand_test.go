//go:build linux

package fssandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// TestHandBuiltDotDotTargetKeepsTheSymlinkRule hands the fence targets built
// by a library caller whose display path (and key) is not clean: a ".." after
// a regular file or a missing directory. The kernel's walk of such a path
// stops (ENOTDIR, ENOENT) before the ".."; the write cleans it lexically and
// reaches another user's link in the sticky directory. A relative display
// path is checked from the process's working directory but resolved from the
// backend's. The victim's file must never change.
func TestHandBuiltDotDotTargetKeepsTheSymlinkRule(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("planting another user's link and file needs root (chown)")
	}
	for _, mode := range []sandbox.Mode{sandbox.WorkspaceWrite, sandbox.DangerFullAccess} {
		for _, spelling := range []string{
			"reg/../dirlink/victim.txt",     // ENOTDIR at reg/..
			"missing/../dirlink/victim.txt", // ENOENT at missing
			"dirlink/victim.txt",            // the clean spelling, refused today
		} {
			for _, variant := range []string{"key-equal", "stale-key", "relative"} {
				name := string(mode) + "/" + spelling + "/" + variant
				t.Run(name, func(t *testing.T) {
					w := newWorld(t)
					sticky := filepath.Join(w.ws, "shared")
					fixture.Build(t, w.ws, "shared/reg: a file", "home/victim.txt: the other user's data")
					require.NoError(t, os.Chmod(sticky, 0o1777|os.ModeSticky))
					victim := filepath.Join(w.ws, "home", "victim.txt")
					require.NoError(t, os.Chown(victim, otherUID, otherUID))
					// Relative, so RESOLVE_BENEATH follows it under workspace-write.
					require.NoError(t, os.Symlink("../home", filepath.Join(sticky, "dirlink")))
					require.NoError(t, os.Lchown(filepath.Join(sticky, "dirlink"), otherUID, otherUID))
					f := w.sandbox(t, mode)

					dp := sticky + "/" + spelling
					key := fs.TargetKey(dp)
					switch variant {
					case "stale-key":
						key = fs.TargetKey(filepath.Join(w.ws, "stale"))
					case "relative":
						// Relative to the backend's working directory, the workspace.
						dp = "shared/" + spelling
						key = fs.TargetKey(filepath.Join(w.ws, "stale"))
					}
					tg := fs.Target{Key: key, DisplayPath: dp}
					for _, m := range mutations {
						_ = m.run(context.Background(), f, tg)
					}
					assert.Equal(t, "the other user's data", readFile(t, victim), "the write followed another user's link in a sticky directory")
					assert.NoDirExists(t, filepath.Join(sticky, "missing"))
				})
			}
		}
	}
}

// TestHandBuiltKeyEqualToDisplayPath hands the fence targets whose key equals
// their display path, spelled in ways a resolution would never produce:
// "..", trailing slashes, doubled slashes, "." components, sibling-prefix
// roots, relative paths, the root itself, and spellings into protected
// paths. The fence no longer resolves such a key (issue 15), so each spelling
// must still leave everything outside the root, and every protected path,
// unchanged, for writes, edits and mkdir.
func TestHandBuiltKeyEqualToDisplayPath(t *testing.T) {
	spellings := []string{
		"{ws}/sub/../../outside/new.txt",
		"{ws}/sub/../../outside/f.txt",
		"{ws}/../outside/f.txt",
		"{ws}/missing/../../outside/f.txt",
		"{ws}/sub/../../ws-evil/new.txt",
		"{ws}//outside-abs.txt",
		"{ws}/./../outside/f.txt",
		"{ws}/sub/",
		"{ws}/sub/f.txt/",
		"{ws}/.",
		"{ws}/",
		"{ws}",
		"{ws}/sub/.",
		"{ws}/sub/..",
		"{ws}-evil/new.txt",
		"{ws}2/new.txt",
		"ws/sub/f.txt",
		"{base}/wslink/sub/f.txt",
		"{ws}/out/f.txt",
		"{ws}/out/../out/f.txt",
		"{ws}/sub/../.git/config",
		"{ws}/sub/../.git/hooks/new",
		"{ws}/sub/../.git",
		"{ws}/sub/../secrets",
		"{ws}/sub/../secrets/new.txt",
		"{ws}/missing/../secrets/x",
		"{ws}/sub/../secrets/.",
		"{ws}/secrets/../secrets/new.txt",
		"{ws}/.git/../.git/config",
		"{ws}/gitlink/config",
		"{ws}/gitlink/../.git/config",
	}
	ops := []struct {
		name string
		run  func(f fs.Service, tg fs.Target) error
	}{
		{"write", func(f fs.Service, tg fs.Target) error {
			_, err := f.WriteText(context.Background(), tg, "pwned", fs.WriteOptions{})
			return err
		}},
		{"create", func(f fs.Service, tg fs.Target) error {
			_, err := f.WriteText(context.Background(), tg, "pwned", fs.WriteOptions{Intent: fs.CreateOnly()})
			return err
		}},
		{"edit", func(f fs.Service, tg fs.Target) error {
			_, err := f.EditText(context.Background(), tg, fs.EditRequest{OldString: "secret", NewString: "pwned", ReplaceAll: true})
			return err
		}},
		{"mkdir", func(f fs.Service, tg fs.Target) error {
			_, err := f.Mkdir(context.Background(), tg, fs.MkdirOptions{})
			return err
		}},
		{"mkdir -p", func(f fs.Service, tg fs.Target) error {
			_, err := f.Mkdir(context.Background(), tg, fs.MkdirOptions{Parents: true})
			return err
		}},
	}
	for _, op := range ops {
		for _, sp := range spellings {
			t.Run(op.name+"/"+sp, func(t *testing.T) {
				w := newWorld(t)
				fixture.Build(t, w.ws,
					"sub/f.txt: secret",
					".git/config: secret",
					".git/HEAD: ref: refs/heads/main",
					".git/hooks/",
					"secrets/key: secret",
					"out => ../outside",
					"gitlink => .git",
				)
				require.NoError(t, os.RemoveAll(filepath.Join(w.ws, "secrets")))
				fixture.Build(t, w.outside, "f.txt: secret")
				require.NoError(t, os.Symlink("ws", filepath.Join(w.base, "wslink")))
				f := newFence(t, sandboxpolicy.Config{
					Mode: sandbox.WorkspaceWrite, WorkspaceRoot: w.ws, TempRoots: []string{}, Protect: []string{"/secrets"},
				}, w.ws, fssandbox.Config{})
				p := strings.NewReplacer("{ws}", w.ws, "{base}", w.base).Replace(sp)
				outside := fixture.Snapshot(t, w.outside)
				evil := fixture.Snapshot(t, filepath.Join(w.base, "ws-evil"))
				git := fixture.Snapshot(t, filepath.Join(w.ws, ".git"))
				_ = op.run(f, fs.Target{Key: fs.TargetKey(p), DisplayPath: p})
				assert.Equal(t, outside, fixture.Snapshot(t, w.outside), "outside changed")
				assert.Equal(t, evil, fixture.Snapshot(t, filepath.Join(w.base, "ws-evil")), "ws-evil changed")
				assert.Equal(t, git, fixture.Snapshot(t, filepath.Join(w.ws, ".git")), ".git changed")
				assert.NoFileExists(t, filepath.Join(w.base, "outside-abs.txt"))
				assert.NoDirExists(t, filepath.Join(w.ws, "secrets"), "the protected path /secrets was created")
				assert.NoFileExists(t, filepath.Join(w.ws, "secrets"), "the protected path /secrets was created")
				if filepath.Clean(p) != filepath.Join(w.ws, "sub", "f.txt") {
					// Only a spelling of sub/f.txt itself may write it.
					assert.Equal(t, "secret", readFile(t, filepath.Join(w.ws, "sub", "f.txt")), "sub/f.txt")
				}
			})
		}
	}
}
