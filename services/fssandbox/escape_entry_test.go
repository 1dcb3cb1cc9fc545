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
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
)

// entryCase is one spelling of an entry operation (mkdir, delete, move)
// through the escape world of buildEscapeWorld: from is the entry (move's
// source), to move's destination.
type entryCase struct {
	op       string // "mkdir", "delete" or "move"
	from, to string
	// allowed reports that workspace-write lets the operation run (inside
	// the workspace); otherwise it must be denied.
	allowed bool
	// gone and kept are workspace paths that must be absent and present
	// after an allowed case.
	gone, kept string
}

func (c entryCase) name() string {
	s := c.op + " " + c.from
	if c.to != "" {
		s += " to " + c.to
	}
	if c.allowed {
		return s + " is allowed"
	}
	return s + " is denied"
}

var entryCases = []entryCase{
	{op: "mkdir", from: "new/dir", allowed: true, kept: "new/dir"},
	{op: "mkdir", from: "../outside/x"},
	{op: "mkdir", from: "d/../../outside/x"},
	{op: "mkdir", from: "{out}/x"},
	{op: "mkdir", from: "{base}/ws-evil/x"},
	{op: "mkdir", from: "linkout/x"},
	{op: "mkdir", from: "rellinkout/x/y"},
	{op: "mkdir", from: "linkout"},
	{op: "mkdir", from: "/proc/self/root{out}/x"},
	{op: "mkdir", from: "{outfd}/x"},
	{op: "mkdir", from: "procroot{out}/x"},

	{op: "delete", from: "inner.txt", allowed: true, gone: "inner.txt"},
	{op: "delete", from: "filelink", allowed: true, gone: "filelink"},
	{op: "delete", from: "linkout", allowed: true, gone: "linkout"},
	{op: "delete", from: "hard.txt", allowed: true, gone: "hard.txt"},
	{op: "delete", from: "tree", allowed: true, gone: "tree"},
	{op: "delete", from: "."},
	{op: "delete", from: "d/.."},
	{op: "delete", from: "{out}/secret.txt"},
	{op: "delete", from: "../outside/secret.txt"},
	{op: "delete", from: "d/../../outside/secret.txt"},
	{op: "delete", from: "linkout/secret.txt"},
	{op: "delete", from: "rellinkout/sub"},
	{op: "delete", from: "/proc/self/root{out}/secret.txt"},
	{op: "delete", from: "{outfd}/secret.txt"},
	{op: "delete", from: "{base}/ws2"},

	{op: "move", from: "inner.txt", to: "d/moved.txt", allowed: true, gone: "inner.txt", kept: "d/moved.txt"},
	{op: "move", from: "filelink", to: "d/link", allowed: true, gone: "filelink", kept: "d/link"},
	{op: "move", from: "tree", to: "d/tree", allowed: true, gone: "tree", kept: "d/tree/l"},
	{op: "move", from: "inner.txt", to: "dangling", allowed: true, gone: "inner.txt", kept: "dangling"},
	{op: "move", from: "inner.txt", to: "../outside/x.txt"},
	{op: "move", from: "inner.txt", to: "{out}/x.txt"},
	{op: "move", from: "inner.txt", to: "linkout/x.txt"},
	{op: "move", from: "inner.txt", to: "rellinkout/x.txt"},
	{op: "move", from: "inner.txt", to: "{outfd}/x.txt"},
	{op: "move", from: "inner.txt", to: "/proc/self/root{out}/x.txt"},
	{op: "move", from: "inner.txt", to: "{base}/ws-evil/x.txt"},
	{op: "move", from: "d", to: "linkout/d"},
	{op: "move", from: "{out}/secret.txt", to: "stolen.txt"},
	{op: "move", from: "linkout/secret.txt", to: "stolen.txt"},
	{op: "move", from: "../outside/sub", to: "stolen"},
	{op: "move", from: "{outfd}/secret.txt", to: "stolen.txt"},
	{op: "move", from: ".", to: "d/ws"},
	{op: "move", from: "d", to: "."},
}

// runEntry runs c's operation on f.
func runEntry(ctx context.Context, f *fssandbox.FileSystem, expand *strings.Replacer, c entryCase) error {
	from, err := f.Resolve(ctx, expand.Replace(c.from), fs.ResolveOptions{})
	if err != nil {
		return err
	}
	switch c.op {
	case "mkdir":
		_, err = f.Mkdir(ctx, from, fs.MkdirOptions{Parents: true})
	case "delete":
		_, err = f.Remove(ctx, from, fs.RemoveOptions{Recursive: true})
	default:
		to, rerr := f.Resolve(ctx, expand.Replace(c.to), fs.ResolveOptions{})
		if rerr != nil {
			return rerr
		}
		_, err = f.Move(ctx, from, to, fs.MoveOptions{Overwrite: true})
	}
	return err
}

// TestEntryEscapeMatrix runs every spelling of mkdir, delete and move under
// each mode and checks the disk: under workspace-write an escape is denied
// and changes nothing anywhere, an allowed case lands inside; under
// read-only everything is denied; nothing outside the workspace ever
// changes, whatever the mode but danger-full-access.
func TestEntryEscapeMatrix(t *testing.T) {
	for _, mode := range []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite} {
		for _, tc := range entryCases {
			t.Run(string(mode)+"/"+tc.name(), func(t *testing.T) {
				w := newWorld(t)
				expand := buildEscapeWorld(t, w)
				fixture.Build(t, w.ws, "tree/f: f", "tree/sub/g: g", "tree/l => "+w.outside)
				f := w.sandbox(t, mode)
				outsideBefore := fixture.Snapshot(t, w.outside)
				siblingsBefore := siblings(t, w)
				wsBefore := fixture.Snapshot(t, w.ws)

				err := withinHangBound(t, func() error { return runEntry(context.Background(), f, expand, tc) })

				assert.Equal(t, outsideBefore, fixture.Snapshot(t, w.outside), "the outside directory changed")
				assert.Equal(t, siblingsBefore, siblings(t, w), "a sibling directory changed")
				assert.DirExists(t, w.ws, "the workspace root itself survives")
				if mode == sandbox.ReadOnly || !tc.allowed {
					require.ErrorIs(t, err, fs.ErrSandboxDenied, "error: %v", err)
					assert.Equal(t, mode, err.(*fs.Error).Mode) //nolint:errorlint,forcetypeassert // the fence returns *fs.Error itself
					assert.Equal(t, wsBefore, fixture.Snapshot(t, w.ws), "a denied operation changed the workspace")
					return
				}
				require.NoError(t, err)
				if tc.gone != "" {
					_, err := os.Lstat(filepath.Join(w.ws, tc.gone))
					assert.True(t, os.IsNotExist(err), "%s must be gone", tc.gone)
				}
				if tc.kept != "" {
					_, err := os.Lstat(filepath.Join(w.ws, tc.kept))
					assert.NoError(t, err, "%s must be there", tc.kept)
				}
			})
		}
	}
}

// TestEntrySwapRace runs mkdir, delete and move through a workspace
// directory that a goroutine keeps exchanging with a symlink to the outside
// directory (renameat2 RENAME_EXCHANGE, atomic): whichever the operations
// meet, nothing outside the workspace changes.
func TestEntrySwapRace(t *testing.T) {
	w := newWorld(t)
	fixture.Build(t, w.outside, "victim: outside victim", "sub/")
	fixture.Build(t, w.ws, "swap/", "swaplink => "+w.outside)
	f := w.sandbox(t, sandbox.WorkspaceWrite)
	outsideBefore := fixture.Snapshot(t, w.outside)

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			_ = unix.Renameat2(unix.AT_FDCWD, filepath.Join(w.ws, "swap"), unix.AT_FDCWD, filepath.Join(w.ws, "swaplink"), unix.RENAME_EXCHANGE)
		}
	})
	ctx := context.Background()
	ops := []entryCase{
		{op: "mkdir", from: "swap/made/deeper"},
		{op: "delete", from: "swap/victim"},
		{op: "delete", from: "swap/sub"},
		{op: "move", from: "swap/victim", to: "stolen"},
		{op: "move", from: "inner.txt", to: "swap/planted"},
	}
	expand := strings.NewReplacer()
	landed, denied := 0, 0
	rounds := 300
	if testing.Short() {
		rounds = 30 // make check's tier: the same race, a tenth as long
	}
	for i := range rounds {
		// Refill the real directory, wherever it is now, so every round
		// has something to delete and move.
		for _, d := range []string{"swap", "swaplink"} {
			refill(filepath.Join(w.ws, d))
		}
		_ = os.WriteFile(filepath.Join(w.ws, "inner.txt"), []byte("inner"), 0o644)
		switch err := runEntry(ctx, f, expand, ops[i%len(ops)]); {
		case err == nil:
			landed++
		case errors.Is(err, fs.ErrSandboxDenied):
			denied++
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d operations landed inside, %d were denied", landed, denied)
	assert.Positive(t, landed, "the race never let an operation through: it tests nothing")
	assert.Positive(t, denied, "the race never met the symlink: it tests nothing")
	assert.Equal(t, outsideBefore, fixture.Snapshot(t, w.outside), "an operation escaped through the swapped directory")
}

// refill puts a victim file and a sub directory into the directory at p, if
// p is a directory, through its descriptor (never through a symlink the
// swapper may have put there meanwhile).
func refill(p string) {
	dir, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(dir) //nolint:errcheck // test descriptor
	if fd, err := unix.Openat(dir, "victim", unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644); err == nil {
		_, _ = unix.Write(fd, []byte("inside"))
		_ = unix.Close(fd)
	}
	_ = unix.Mkdirat(dir, "sub", 0o755)
}
