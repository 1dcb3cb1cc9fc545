//go:build linux

package fssandbox_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hfs "github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// mutateWorld is a fixture home outside /tmp that is also the workspace
// (`--workspace ~`), holding default-denied credentials (~/.ssh, ~/.config/gh,
// .env files), a file an operator denies (--deny-read <home>/config/prod.key)
// and plain files.
type mutateWorld struct{ home string }

func newMutateWorld(t *testing.T) mutateWorld {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "fence-denymutate-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	base, err = filepath.EvalSymlinks(base)
	require.NoError(t, err)
	w := mutateWorld{home: filepath.Join(base, "home")}
	for name, content := range map[string]string{
		".ssh/id_ed25519":      keyMarker + "\n",
		".config/gh/hosts.yml": "GH-TOKEN-MARKER\n",
		".config/app.toml":     "plain\n",
		".env":                 "ENV-SECRET-MARKER\n",
		"tmpd/.env.local":      "ENV-LOCAL-MARKER\n",
		"tmpd/other.txt":       "other\n",
		"config/prod.key":      "PRODKEY-MARKER\n",
		"config/app.yaml":      "plain\n",
		"notes.txt":            "notes\n",
	} {
		p := filepath.Join(w.home, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	}
	return w
}

func (w mutateWorld) fence(t *testing.T, mode sandbox.Mode) *fssandbox.FileSystem {
	t.Helper()
	return newSandbox(t, sandboxpolicy.Config{
		Mode: mode, WorkspaceRoot: w.home, TempRoots: []string{}, Homes: []string{w.home},
		DenyRead: []string{filepath.Join(w.home, "config", "prod.key")},
	}, w.home)
}

// onDisk is every entry beneath root: its type and permission bits, and a
// regular file's bytes.
func onDisk(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		info, err := d.Info()
		require.NoError(t, err)
		rel, err := filepath.Rel(root, p)
		require.NoError(t, err)
		out[rel] = info.Mode().String()
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			out[rel] += " " + string(b)
		}
		return nil
	}))
	return out
}

// TestMutationOfDeniedPathRefused is review finding F0/F8's inputs: moving a
// denied path (.env, ~/.ssh) or an ancestor of one (~/.config holding
// ~/.config/gh, config holding an operator's --deny-read file), moving a
// file onto a denied name, deleting a denied file or a tree holding one,
// and making a directory that is or holds a denied path are refused with
// FS_READ_DENIED in the modes that write, and refused in read-only; nothing
// on disk changes (every entry's bytes, mode and presence), and the moved
// names never exist.
func TestMutationOfDeniedPathRefused(t *testing.T) {
	ctx := context.Background()
	type call func(f *fssandbox.FileSystem, tg func(string) hfs.Target) error
	move := func(src, dst string, overwrite bool) call {
		return func(f *fssandbox.FileSystem, tg func(string) hfs.Target) error {
			_, err := f.Move(ctx, tg(src), tg(dst), hfs.MoveOptions{Overwrite: overwrite})
			return err
		}
	}
	remove := func(p string, recursive bool) call {
		return func(f *fssandbox.FileSystem, tg func(string) hfs.Target) error {
			_, err := f.Remove(ctx, tg(p), hfs.RemoveOptions{Recursive: recursive})
			return err
		}
	}
	mkdir := func(p string) call {
		return func(f *fssandbox.FileSystem, tg func(string) hfs.Target) error {
			_, err := f.Mkdir(ctx, tg(p), hfs.MkdirOptions{Parents: true})
			return err
		}
	}
	cases := []struct {
		name   string
		run    call
		absent []string // names that must not exist afterwards
	}{
		{"move .env to notenv.txt", move(".env", "notenv.txt", false), []string{"notenv.txt"}},
		{"move ~/.ssh to ~/ssh-x", move(".ssh", "ssh-x", false), []string{"ssh-x"}},
		{"move ~/.config (holds ~/.config/gh) to ~/.config-x", move(".config", ".config-x", false), []string{".config-x"}},
		{"move config (holds a --deny-read file) to config2", move("config", "config2", false), []string{"config2"}},
		{"move the --deny-read file out of config", move("config/prod.key", "prod.key", false), []string{"prod.key"}},
		{"move a file onto .env", move("notes.txt", ".env", true), nil},
		{"move a file to a new .env.prod", move("notes.txt", ".env.prod", false), []string{".env.prod"}},
		{"move a file into ~/.ssh", move("notes.txt", ".ssh/notes.txt", false), []string{".ssh/notes.txt"}},
		{"delete .env", remove(".env", false), nil},
		{"delete tmpd/.env.local", remove("tmpd/.env.local", false), nil},
		{"recursive delete of tmpd (holds .env.local)", remove("tmpd", true), nil},
		{"recursive delete of config (holds a --deny-read file)", remove("config", true), nil},
		{"recursive delete of ~/.config (holds ~/.config/gh)", remove(".config", true), nil},
		{"delete ~/.config/gh/hosts.yml", remove(".config/gh/hosts.yml", false), nil},
		{"mkdir -p ~/.config (holds ~/.config/gh)", mkdir(".config"), nil},
		{"mkdir ~/.ssh/new", mkdir(".ssh/new"), []string{".ssh/new"}},
		{"mkdir .env.d", mkdir(".env.d"), []string{".env.d"}},
	}
	for _, mode := range []sandbox.Mode{sandbox.WorkspaceWrite, sandbox.DangerFullAccess, sandbox.ReadOnly} {
		for _, tc := range cases {
			t.Run(string(mode)+"/"+tc.name, func(t *testing.T) {
				w := newMutateWorld(t)
				f := w.fence(t, mode)
				tg := func(p string) hfs.Target {
					target, err := f.Resolve(ctx, p, hfs.ResolveOptions{})
					require.NoError(t, err)
					return target
				}
				before := onDisk(t, w.home)

				err := tc.run(f, tg)
				require.Error(t, err)
				fe, ok := errors.AsType[*hfs.Error](err)
				require.True(t, ok, "%v", err)
				if mode == sandbox.ReadOnly {
					assert.Contains(t, []hfs.Code{hfs.CodeReadDenied, hfs.CodeSandboxDenied}, fe.Code, "%v", err)
				} else {
					assert.Equal(t, hfs.CodeReadDenied, fe.Code, "%v", err)
					assert.Equal(t, "write", fe.Op)
					assert.Equal(t, mode, fe.Mode)
					assert.Contains(t, fe.Message, "is in the deny-read set")
					_, isDenial := errors.AsType[*hfs.ReadDenial](err)
					assert.True(t, isDenial, "caused by an *fs.ReadDenial")
				}

				assert.Equal(t, before, onDisk(t, w.home), "nothing on disk changed")
				for _, name := range tc.absent {
					_, err := os.Lstat(filepath.Join(w.home, name))
					require.ErrorIs(t, err, os.ErrNotExist, name)
					text, err := f.ReadText(ctx, hfs.Target{DisplayPath: filepath.Join(w.home, name), Key: hfs.TargetKey(filepath.Join(w.home, name))})
					assert.Error(t, err, "nothing to read under the new name")
					assert.Empty(t, text)
				}
			})
		}
	}
}

// TestMutationBesideDeniedPathAllowed: the entries beside a denied path, and
// a directory that holds none, still move, delete and mkdir in the modes that
// write (the parent of a denied path is not itself refused).
func TestMutationBesideDeniedPathAllowed(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []sandbox.Mode{sandbox.WorkspaceWrite, sandbox.DangerFullAccess} {
		t.Run(string(mode), func(t *testing.T) {
			w := newMutateWorld(t)
			f := w.fence(t, mode)
			tg := func(p string) hfs.Target {
				target, err := f.Resolve(ctx, p, hfs.ResolveOptions{})
				require.NoError(t, err)
				return target
			}
			_, err := f.Move(ctx, tg("notes.txt"), tg("notes2.txt"), hfs.MoveOptions{})
			require.NoError(t, err)
			assert.Equal(t, "notes\n", readFile(t, filepath.Join(w.home, "notes2.txt")))
			_, err = f.Move(ctx, tg(".config/app.toml"), tg("config/app.toml"), hfs.MoveOptions{})
			require.NoError(t, err)
			assert.Equal(t, "plain\n", readFile(t, filepath.Join(w.home, "config", "app.toml")))
			_, err = f.Remove(ctx, tg("tmpd/other.txt"), hfs.RemoveOptions{})
			require.NoError(t, err)
			assert.NoFileExists(t, filepath.Join(w.home, "tmpd", "other.txt"))
			_, err = f.Mkdir(ctx, tg("config/sub/deeper"), hfs.MkdirOptions{Parents: true})
			require.NoError(t, err)
			assert.DirExists(t, filepath.Join(w.home, "config", "sub", "deeper"))
			_, err = f.Remove(ctx, tg("config/sub"), hfs.RemoveOptions{Recursive: true})
			require.NoError(t, err)
			assert.NoDirExists(t, filepath.Join(w.home, "config", "sub"))
			assert.Equal(t, "PRODKEY-MARKER\n", readFile(t, filepath.Join(w.home, "config", "prod.key")))
		})
	}
}
