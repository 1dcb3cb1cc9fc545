//go:build linux

package fssandbox_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/journal"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// Under workspace-write every mutation runs under the Landlock domain of
// the workspace, where no file of the journal (outside it) can be opened:
// the journal opens and rolls its segments before the fence, and writes
// only through descriptors already open inside it. With a segment size so
// small that every change starts a new segment, each kind of change is
// journaled, Applied, with its prior content, under Landlock and on the
// fallback.
func TestJournalUnderTheFence(t *testing.T) {
	for _, ll := range []string{fssandbox.LandlockAuto, fssandbox.LandlockOff} {
		t.Run(ll, func(t *testing.T) {
			w := newWorld(t)
			state, err := os.MkdirTemp("/var/tmp", "harness-journal-")
			require.NoError(t, err)
			t.Cleanup(func() { _ = os.RemoveAll(state) })
			j, err := journal.Open(journal.Options{Dir: filepath.Join(state, "journal"), MaxBytes: 1 << 20, SegmentBytes: 256, Sync: true})
			require.NoError(t, err)
			t.Cleanup(func() { _ = j.Close() })
			policy, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: w.ws, TempRoots: []string{}})
			require.NoError(t, err)
			f, err := fssandbox.New(policy, fslocal.Config{Cwd: w.ws, Journal: j}, fssandbox.Config{Landlock: ll}, nil)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, f.Close()) })
			if ll == fssandbox.LandlockAuto && f.Layers().LandlockABI == 0 {
				t.Logf("no Landlock domain here (%s): the case runs on the fallback", f.Layers().NoLandlock)
			}
			ctx := context.Background()
			res := func(p string) fs.Target {
				tg, err := f.Resolve(ctx, p, fs.ResolveOptions{})
				require.NoError(t, err)
				return tg
			}
			require.NoError(t, os.WriteFile(filepath.Join(w.ws, "a"), []byte("a0\n"), 0o600))
			require.NoError(t, os.MkdirAll(filepath.Join(w.ws, "tree", "sub"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(w.ws, "tree", "sub", "f"), []byte("f0"), 0o644))

			_, err = f.WriteText(ctx, res("a"), "a1\n", fs.WriteOptions{})
			require.NoError(t, err)
			_, err = f.EditText(ctx, res("a"), fs.EditRequest{OldString: "a1", NewString: "a2"})
			require.NoError(t, err)
			_, err = f.Move(ctx, res("a"), res("b"), fs.MoveOptions{})
			require.NoError(t, err)
			_, err = f.Mkdir(ctx, res("d/e"), fs.MkdirOptions{Parents: true})
			require.NoError(t, err)
			_, err = f.Remove(ctx, res("tree"), fs.RemoveOptions{Recursive: true})
			require.NoError(t, err)

			assert.Equal(t, "a2\n", readFile(t, filepath.Join(w.ws, "b")))
			assert.NoDirExists(t, filepath.Join(w.ws, "tree"))
			entries, err := j.List(journal.ListOptions{})
			require.NoError(t, err)
			require.Len(t, entries, 5)
			kinds := []journal.Kind{journal.Write, journal.Edit, journal.Move, journal.Mkdir, journal.Delete}
			for i, e := range entries {
				assert.Equal(t, kinds[i], e.Kind)
				assert.Equal(t, journal.Applied, e.Status, e.Kind)
				assert.True(t, e.Kept)
			}
			prior := map[int]string{0: "a0\n", 1: "a1\n", 2: "a2\n"}
			for i, want := range prior {
				assert.Equal(t, want, blobText(t, j, entries[i].Before[0].Hash))
			}
			del := entries[4].Before
			require.Len(t, del, 3)
			assert.Equal(t, filepath.Join(w.ws, "tree", "sub", "f"), del[2].Path)
			assert.Equal(t, "f0", blobText(t, j, del[2].Hash))
			segs, err := filepath.Glob(filepath.Join(state, "journal", "seg-*"))
			require.NoError(t, err)
			assert.GreaterOrEqual(t, len(segs), 5, "segments were rolled between changes")
		})
	}
}

func blobText(t *testing.T, j *journal.Journal, hash string) string {
	t.Helper()
	r, _, err := j.OpenBlob(hash)
	require.NoError(t, err)
	defer r.Close() //nolint:errcheck // test
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	return string(b)
}
