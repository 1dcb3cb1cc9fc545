//go:build linux

package fssandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// keyMarker is the fixture key's content; no read may return it.
const keyMarker = "FENCE-KEY-5d1e-MARKER"

// denyWorld is a fixture home outside /tmp holding ~/.ssh/id_ed25519, and a
// workspace beside it with a directory d holding a plain id_ed25519.
type denyWorld struct {
	home, ws, key string
}

func newDenyWorld(t *testing.T) denyWorld {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "fence-denyread-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	base, err = filepath.EvalSymlinks(base)
	require.NoError(t, err)
	w := denyWorld{home: filepath.Join(base, "home"), ws: filepath.Join(base, "ws")}
	w.key = filepath.Join(w.home, ".ssh", "id_ed25519")
	require.NoError(t, os.MkdirAll(filepath.Dir(w.key), 0o700))
	require.NoError(t, os.MkdirAll(filepath.Join(w.ws, "d"), 0o755))
	require.NoError(t, os.WriteFile(w.key, []byte(keyMarker+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(w.ws, "d", "id_ed25519"), []byte("plain\n"), 0o644))
	return w
}

func (w denyWorld) fence(t *testing.T, mode sandbox.Mode) *fssandbox.FileSystem {
	t.Helper()
	return newSandbox(t, sandboxpolicy.Config{Mode: mode, WorkspaceRoot: w.ws, TempRoots: []string{}, Homes: []string{w.home}}, w.ws)
}

// swapDir replaces the workspace directory d by a symlink to ~/.ssh (to, a
// directory, when toKey is false: back to a real directory).
func (w denyWorld) swapDir(t testing.TB, toKey bool, tmp string) {
	d := filepath.Join(w.ws, "d")
	if toKey {
		_ = os.Remove(tmp)
		if os.Symlink(filepath.Dir(w.key), tmp) == nil {
			_ = os.RemoveAll(d)
			_ = os.Rename(tmp, d)
		}
		return
	}
	_ = os.RemoveAll(tmp)
	if os.Mkdir(tmp, 0o755) == nil && os.WriteFile(filepath.Join(tmp, "id_ed25519"), []byte("plain\n"), 0o644) == nil {
		_ = os.Remove(d)
		_ = os.Rename(tmp, d)
	}
}

// TestDenyReadDecidedOnDescriptor: a target resolved while its directory
// was plain, then swapped for a link to ~/.ssh, is refused on the opened
// descriptor by every read (the key never returned); an approval carried by
// a target lets a read through only while the descriptor names the
// approved path.
func TestDenyReadDecidedOnDescriptor(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite, sandbox.DangerFullAccess} {
		t.Run(string(mode), func(t *testing.T) {
			w := newDenyWorld(t)
			f := w.fence(t, mode)
			target, err := f.Resolve(ctx, "d/id_ed25519", fs.ResolveOptions{})
			require.NoError(t, err)
			require.Equal(t, filepath.Join(w.ws, "d", "id_ed25519"), string(target.Key))
			w.swapDir(t, true, filepath.Join(w.ws, ".tmp"))

			text, err := f.ReadText(ctx, target)
			assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "%v", err)
			assert.NotContains(t, text, keyMarker)
			rd, ok := errors.AsType[*fs.ReadDenial](err)
			require.True(t, ok)
			assert.Equal(t, w.key, rd.Path, "the refusal names the descriptor's real path")
			assert.Equal(t, "~/.ssh (default)", rd.Rule)
			fe, _ := errors.AsType[*fs.Error](err)
			assert.Equal(t, mode, fe.Mode)

			b, err := f.ReadBytes(ctx, target, 1<<20)
			assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err))
			assert.NotContains(t, string(b), keyMarker)
			for chunk, err := range f.StreamText(ctx, target) {
				assert.NotContains(t, chunk, keyMarker)
				if err != nil {
					assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err))
				}
			}
			info, err := f.Stat(ctx, target)
			assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "the metadata of what lies inside a denied directory")
			assert.Nil(t, info)

			other := target.ApproveRead(filepath.Join(w.home, ".ssh", "other"))
			text, err = f.ReadText(ctx, other)
			assert.Equal(t, sandboxpolicy.CodeTargetChanged, errcodeOf(err), "%v", err)
			assert.Empty(t, text)

			text, err = f.ReadText(ctx, target.ApproveRead(w.key))
			require.NoError(t, err)
			assert.Equal(t, keyMarker+"\n", text, "the approved path, and only it, is read")
		})
	}
}

// errcodeOf returns the code of an *fs.Error or a
// *sandboxpolicy.EscalationError in err's chain.
func errcodeOf(err error) fs.Code {
	if ee, ok := errors.AsType[*sandboxpolicy.EscalationError](err); ok {
		return ee.Code
	}
	return fs.CodeOf(err)
}

// TestDenyReadDirectorySwapRace: while a goroutine swaps a workspace
// directory between a real one and a link to ~/.ssh, reads of a target
// resolved through it loop; the key's bytes never come back.
func TestDenyReadDirectorySwapRace(t *testing.T) {
	ctx := context.Background()
	w := newDenyWorld(t)
	f := w.fence(t, sandbox.DangerFullAccess)
	target, err := f.Resolve(ctx, "d/id_ed25519", fs.ResolveOptions{})
	require.NoError(t, err)
	var stop atomic.Bool
	var swapper sync.WaitGroup
	swapper.Go(func() {
		for n := 0; !stop.Load(); n++ {
			w.swapDir(t, n%2 == 0, filepath.Join(w.ws, ".tmp"))
		}
	})
	plain, denied := 0, 0
	for range 2000 {
		text, err := f.ReadText(ctx, target)
		assert.NotContains(t, text, keyMarker)
		switch {
		case err == nil:
			plain++
			assert.Equal(t, "plain\n", text)
		case fs.CodeOf(err) == fs.CodeReadDenied:
			denied++
		}
		res, _ := f.Grep(ctx, target, fs.GrepOptions{Pattern: "MARKER", Mode: fs.GrepContent})
		for _, file := range res.Files {
			for _, l := range file.Lines {
				assert.False(t, strings.Contains(l.Text, keyMarker))
			}
		}
	}
	stop.Store(true)
	swapper.Wait()
	// How often each side was seen depends on the scheduler (under load
	// the swapper may barely run): logged, not required. The link state
	// itself is then set and must be refused, so the loop's assertions
	// were able to fail.
	t.Logf("%d plain reads, %d refused", plain, denied)
	w.swapDir(t, true, filepath.Join(w.ws, ".tmp"))
	text, err := f.ReadText(ctx, target)
	assert.NotContains(t, text, keyMarker)
	assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "%v", err)
}

// TestDenyReadSymlinkNamedLikeADeniedFile (issue 36 review): a `.env` that
// is a symlink to a file elsewhere (whose own name no pattern denies) is
// refused to the file tools as the name it is read by, and the file it
// names is unchanged; the file read by its own path is not denied.
func TestDenyReadSymlinkNamedLikeADeniedFile(t *testing.T) {
	ctx := context.Background()
	w := newDenyWorld(t)
	secret := filepath.Join(w.home, "outside-secret")
	require.NoError(t, os.WriteFile(secret, []byte(keyMarker+"\n"), 0o600))
	require.NoError(t, os.Symlink(secret, filepath.Join(w.ws, "d", ".env")))
	f := w.fence(t, sandbox.WorkspaceWrite)
	target, err := f.Resolve(ctx, "d/.env", fs.ResolveOptions{})
	require.NoError(t, err)
	text, err := f.ReadText(ctx, target)
	assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "%v", err)
	assert.NotContains(t, text, keyMarker)
	rd, ok := errors.AsType[*fs.ReadDenial](err)
	require.True(t, ok)
	assert.Equal(t, ".env (default)", rd.Rule)
	b, err := os.ReadFile(secret)
	require.NoError(t, err)
	assert.Equal(t, keyMarker+"\n", string(b))
	direct, err := f.Resolve(ctx, secret, fs.ResolveOptions{})
	require.NoError(t, err)
	text, err = f.ReadText(ctx, direct)
	require.NoError(t, err)
	assert.Equal(t, keyMarker+"\n", text)
}
