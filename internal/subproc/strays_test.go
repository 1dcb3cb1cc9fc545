//go:build linux

package subproc_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
)

// TestBwrapLeavesNoMountPointOnTheHost (issue 34: a command leaves no
// trace): a socket, a deny-read file and a deny-read directory in a
// writable root, found for the view and then removed on the host before
// bubblewrap mounts over them (a server removing its socket, a tree being
// removed), leave nothing behind: bubblewrap makes their mount points in
// the host's directory, and they are gone again once the command has
// started (the host's directory can be removed while the command runs) and
// after it. What was there before is left alone: a socket still there
// stays, masked.
func TestBwrapLeavesNoMountPointOnTheHost(t *testing.T) {
	requireLandlock(t)
	w := newSocketsWorld(t)
	sub := filepath.Join(w.ws, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	gone := []string{filepath.Join(sub, "gone.sock"), filepath.Join(sub, ".env"), filepath.Join(sub, ".secrets")}
	out, err := subproc.RunBwrap(t.Context(), sandbox(t), subproc.Spec{
		// The host removes sub while the command runs: the command waits
		// for it (up to 30 s), then lists its workspace.
		Command: `touch started; i=0; while [ -d sub ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done; rm started; ls -A; echo end`,
		Dir:     w.ws,
		Env:     []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Confine: &subproc.Confinement{
			WritableRoots: []string{w.ws},
			MaskedSockets: []string{gone[0], w.inner.Path},
			Masked:        []subproc.Masked{{Path: gone[1]}, {Path: gone[2], Dir: true}},
		},
	}, time.Minute, 1<<20, func(int) error {
		// Once the command runs, the host removes sub (failing while
		// anything is left in it).
		go func() {
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				if _, err := os.Lstat(filepath.Join(w.ws, "started")); err == nil && os.Remove(sub) == nil {
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
		return nil
	}, subproc.Watch{})
	require.NoError(t, err)
	require.True(t, out.Status.Started, out.Status.Error+out.Stderr.String())
	assert.Equal(t, "inner.sock\nend\n", out.Stdout.String(), out.Stderr.String())
	_, err = os.Lstat(sub)
	assert.ErrorIs(t, err, os.ErrNotExist, "the host removed sub while the command ran")
	entries, err := os.ReadDir(w.ws)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"inner.sock"}, names)
	st, err := os.Lstat(w.inner.Path)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket, st.Mode().Type(), "the socket that stayed is the host's, untouched")
	n, _ := w.inner.Accepted()
	assert.Zero(t, n)
}
