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
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// Secret markers of the attack fixture besides keyMarker; no result may
// hold one.
const (
	netrcMarker = "NETRC-3c1f-MARKER"
	envMarker   = "ENV-8b2d-MARKER"
	pemMarker   = "PEM-6e0a-MARKER"
)

// credWorld is a fixture home outside /tmp (~/.ssh/id_ed25519,
// ~/.netrc, and ~/.SSH, a symlink to ~/.ssh spelled in another case), a
// vault an operator denies with an anchored `**` pattern
// (`<base>/vault/**/*.key`), and a workspace holding .env, sub/.env and, in
// ws, what an attacker places there: hard links to the key and to ~/.netrc,
// symlinks to the key, to ~/.ssh, to sub (a directory holding a .env), to
// .env and to the vault's key, and, as root, bind mounts of ~/.ssh (mnt)
// and of the whole home (h: ~/.ssh renamed by a bind mount of its parent).
type credWorld struct {
	base, home, ws, key, netrc, vaultKey string
	bind                                 string // why the bind mounts are missing, "" when made
}

func newCredWorld(t *testing.T) credWorld {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "fence-attack-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	base, err = filepath.EvalSymlinks(base)
	require.NoError(t, err)
	w := credWorld{base: base, home: filepath.Join(base, "home"), ws: filepath.Join(base, "ws")}
	w.key = filepath.Join(w.home, ".ssh", "id_ed25519")
	w.netrc = filepath.Join(w.home, ".netrc")
	w.vaultKey = filepath.Join(base, "vault", "a", "b.key")
	for p, content := range map[string]string{
		w.key:                            keyMarker + "\n",
		w.netrc:                          netrcMarker + "\n",
		w.vaultKey:                       pemMarker + "\n",
		filepath.Join(w.ws, ".env"):      envMarker + "\n",
		filepath.Join(w.ws, "sub/.env"):  envMarker + "\n",
		filepath.Join(w.ws, "readme.md"): "plain\n",
	} {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	}
	require.NoError(t, os.Symlink(".ssh", filepath.Join(w.home, ".SSH")))
	require.NoError(t, os.Link(w.key, filepath.Join(w.ws, "hl")))
	require.NoError(t, os.Link(w.netrc, filepath.Join(w.ws, "nhl")))
	for link, dest := range map[string]string{
		"keylink": w.key, "sshdir": filepath.Dir(w.key), "envdir": "sub", "notenv": ".env", "pemlink": w.vaultKey,
	} {
		require.NoError(t, os.Symlink(dest, filepath.Join(w.ws, link)))
	}
	for mnt, src := range map[string]string{"mnt": filepath.Dir(w.key), "h": w.home} {
		dir := filepath.Join(w.ws, mnt)
		require.NoError(t, os.Mkdir(dir, 0o755))
		if err := unix.Mount(src, dir, "", unix.MS_BIND, ""); err != nil {
			w.bind = "no bind mount (root only): " + err.Error()
			continue
		}
		t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	}
	return w
}

func (w credWorld) fence(t *testing.T, mode sandbox.Mode) *fssandbox.FileSystem {
	t.Helper()
	return newSandbox(t, sandboxpolicy.Config{
		Mode: mode, WorkspaceRoot: w.ws, TempRoots: []string{}, Homes: []string{w.home},
		DenyRead: []string{filepath.Join(w.base, "vault") + "/**/*.key"},
	}, w.ws)
}

// noSecret asserts that s holds no marker of the fixture.
func noSecret(t *testing.T, s string, msgAndArgs ...any) {
	t.Helper()
	for _, m := range []string{keyMarker, netrcMarker, envMarker, pemMarker} {
		assert.NotContains(t, s, m, msgAndArgs...)
	}
}

// TestDenyReadAttacks: each way an attacker in the workspace reaches a
// credential (a hard link to an anchored denied file or to a file in a
// denied directory, a symlink to the file, to its directory or to a
// directory holding a .env, a symlink to .env, "..", a spelling in another
// case that reaches ~/.ssh, a symlink to a file an anchored `**` pattern
// denies, and as root a bind mount of ~/.ssh or of the home) is refused in
// every mode with FS_READ_DENIED by read, read of bytes, stat and a grep
// naming it; nothing secret comes back; a grep over the whole workspace
// returns no secret; a write or an edit through each is refused and
// changes no byte on disk (the key keeps its links).
func TestDenyReadAttacks(t *testing.T) {
	ctx := context.Background()
	w := newCredWorld(t)
	reads := []struct{ name, path, skip string }{
		{"a hard link to ~/.ssh/id_ed25519", "hl", ""},
		{"a hard link to ~/.netrc", "nhl", ""},
		{"a symlink to the key", "keylink", ""},
		{"the key through a symlink to ~/.ssh", "sshdir/id_ed25519", ""},
		{"a .env through a symlinked directory", "envdir/.env", ""},
		{"a symlink to .env", "notenv", ""},
		{".env through ..", "sub/../.env", ""},
		{"the key through ..", "sub/../../home/.ssh/id_ed25519", ""},
		{"the key spelled ~/.SSH", filepath.Join(w.home, ".SSH", "id_ed25519"), ""},
		{"the key through . and ..", filepath.Join(w.home, ".", ".ssh", "..", ".ssh", "id_ed25519"), ""},
		{"a symlink to a file of an anchored ** pattern", "pemlink", ""},
		{"the key through a bind mount of ~/.ssh", "mnt/id_ed25519", w.bind},
		{"the key through a bind mount of the home", "h/.ssh/id_ed25519", w.bind},
		{"~/.netrc through a bind mount of the home", "h/.netrc", w.bind},
	}
	for _, mode := range []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite, sandbox.DangerFullAccess} {
		f := w.fence(t, mode)
		for _, tc := range reads {
			t.Run(string(mode)+"/read/"+tc.name, func(t *testing.T) {
				if tc.skip != "" {
					t.Skip(tc.skip)
				}
				tg, err := f.Resolve(ctx, tc.path, fs.ResolveOptions{})
				require.NoError(t, err)
				text, err := f.ReadText(ctx, tg)
				assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "read: %v", err)
				noSecret(t, text)
				b, err := f.ReadBytes(ctx, tg, 1<<20)
				assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "read bytes: %v", err)
				noSecret(t, string(b))
				info, err := f.Stat(ctx, tg)
				assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "stat: %v", err)
				assert.Nil(t, info)
				res, err := f.Grep(ctx, tg, fs.GrepOptions{Pattern: "MARKER", Mode: fs.GrepContent})
				assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "grep: %v", err)
				noSecret(t, grepText(res))
			})
		}
		t.Run(string(mode)+"/grep the whole workspace", func(t *testing.T) {
			tg, err := f.Resolve(ctx, ".", fs.ResolveOptions{})
			require.NoError(t, err)
			res, err := f.Grep(ctx, tg, fs.GrepOptions{Pattern: "MARKER|plain", Mode: fs.GrepContent, SearchScope: fs.SearchScope{Hidden: true, NoIgnore: true}})
			require.NoError(t, err)
			noSecret(t, grepText(res))
			assert.Contains(t, grepText(res), "readme.md: plain", "the plain file is searched")
			assert.GreaterOrEqual(t, res.Denied, 4, "the .env files and the hard links are counted as denied")
		})
	}

	writes := []struct{ name, path, skip string }{
		{"a hard link to the key", "hl", ""},
		{"a hard link to ~/.netrc", "nhl", ""},
		{"a symlink to the key", "keylink", ""},
		{"a .env through a symlinked directory", "envdir/.env", ""},
		{"a symlink to .env", "notenv", ""},
		{"a symlink to a file of an anchored ** pattern", "pemlink", ""},
		{"the key through a bind mount of the home", "h/.ssh/id_ed25519", w.bind},
	}
	for _, mode := range []sandbox.Mode{sandbox.WorkspaceWrite, sandbox.DangerFullAccess} {
		f := w.fence(t, mode)
		for _, tc := range writes {
			t.Run(string(mode)+"/write/"+tc.name, func(t *testing.T) {
				if tc.skip != "" {
					t.Skip(tc.skip)
				}
				before := onDisk(t, w.base)
				tg, err := f.Resolve(ctx, tc.path, fs.ResolveOptions{})
				require.NoError(t, err)
				_, err = f.WriteText(ctx, tg, "overwritten\n", fs.WriteOptions{})
				assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "write: %v", err)
				_, err = f.EditText(ctx, tg, fs.EditRequest{OldString: "MARKER", NewString: "edited"})
				assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "edit: %v", err)
				assert.Equal(t, before, onDisk(t, w.base), "nothing on disk changed")
				var st unix.Stat_t
				require.NoError(t, unix.Stat(w.key, &st))
				assert.Equal(t, uint64(2), uint64(st.Nlink), "the key keeps its hard link") //nolint:unconvert // Nlink is uint32 on some platforms
			})
		}
	}
}

// grepText is every path and line of res, one per line.
func grepText(res fs.GrepResult) string {
	var b strings.Builder
	for _, f := range res.Files {
		b.WriteString(f.Path + "\n")
		for _, l := range f.Lines {
			b.WriteString(f.Path + ": " + l.Text + "\n")
		}
	}
	return b.String()
}

// TestDenyReadGrepSwapRace: while a goroutine exchanges (renameat2
// RENAME_EXCHANGE) a workspace directory with a symlink to ~/.ssh and a
// workspace file with a symlink to the key, greps over the workspace loop
// (the walk lists a plain entry, then opens what the swap put there): the
// key never comes back.
func TestDenyReadGrepSwapRace(t *testing.T) {
	ctx := context.Background()
	w := newCredWorld(t)
	for p, content := range map[string]string{"d/id_ed25519": "plain MARKER\n", "f": "plain MARKER\n"} {
		require.NoError(t, os.MkdirAll(filepath.Join(w.ws, filepath.Dir(p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(w.ws, p), []byte(content), 0o644))
	}
	require.NoError(t, os.Symlink(filepath.Dir(w.key), filepath.Join(w.ws, "d.swap")))
	require.NoError(t, os.Symlink(w.key, filepath.Join(w.ws, "f.swap")))
	f := w.fence(t, sandbox.DangerFullAccess)
	tg, err := f.Resolve(ctx, ".", fs.ResolveOptions{})
	require.NoError(t, err)
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		n := 0
		defer func() { done <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, name := range []string{"d", "f"} {
				a, b := filepath.Join(w.ws, name), filepath.Join(w.ws, name+".swap")
				if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
					t.Errorf("swap: %v", err)
					return
				}
			}
			n++
		}
	}()
	found := 0
	for range 300 {
		res, err := f.Grep(ctx, tg, fs.GrepOptions{Pattern: "MARKER", Mode: fs.GrepContent, SearchScope: fs.SearchScope{NoIgnore: true}})
		if err != nil {
			continue
		}
		noSecret(t, grepText(res))
		found += len(res.Files)
	}
	close(stop)
	swaps := <-done
	t.Logf("%d swaps, %d plain files found", swaps, found)
	assert.Positive(t, swaps)
	assert.Positive(t, found, "the plain files were searched")
}

// TestDenyReadTreePatternBase: an anchored `**` pattern is never expanded,
// but its literal base (<base>/vault for <base>/vault/**/*.key) stands for
// what it may hold: moving or deleting the base is refused with
// FS_READ_DENIED and changes nothing; a move beneath the base keeps the
// key under the pattern (still refused to a read at its new path), so it
// is allowed.
func TestDenyReadTreePatternBase(t *testing.T) {
	ctx := context.Background()
	w := newCredWorld(t)
	f := w.fence(t, sandbox.DangerFullAccess)
	vault := filepath.Join(w.base, "vault")
	tg := func(p string) fs.Target {
		target, err := f.Resolve(ctx, p, fs.ResolveOptions{})
		require.NoError(t, err)
		return target
	}
	before := onDisk(t, vault)
	_, err := f.Move(ctx, tg(vault), tg(vault+"2"), fs.MoveOptions{})
	assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "move: %v", err)
	assert.ErrorContains(t, err, "which matches beneath "+vault)
	_, err = f.Remove(ctx, tg(vault), fs.RemoveOptions{Recursive: true})
	assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "delete: %v", err)
	assert.Equal(t, before, onDisk(t, vault), "nothing on disk changed")
	assert.NoDirExists(t, vault+"2")

	_, err = f.Move(ctx, tg(filepath.Join(vault, "a")), tg(filepath.Join(vault, "a2")), fs.MoveOptions{})
	require.NoError(t, err)
	text, err := f.ReadText(ctx, tg(filepath.Join(vault, "a2", "b.key")))
	assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "read: %v", err)
	noSecret(t, text)
}
