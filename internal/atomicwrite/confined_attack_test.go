//go:build linux

package atomicwrite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/landlock"
)

// A Confined write skips the descriptor-path checks and relies on the
// Landlock domain alone. Here the parent directory is moved out of the
// domain's root after it was opened and before Write runs: every step of
// every publication (the unnamed file or the staging directory, the link,
// the rename over an existing file, the in-place last resort for a file the
// directory refuses to replace) must be refused, and the moved directory
// must be exactly as it was.
func TestWrite_ConfinedParentMovedOutOfTheDomain(t *testing.T) {
	exec, err := landlock.New(landlock.Config{})
	if ue, ok := errors.AsType[*landlock.UnavailableError](err); ok {
		t.Skipf("Landlock is unavailable here: %v", ue)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = exec.Close() })
	for _, m := range mechanisms {
		for _, pb := range publications {
			for _, name := range []string{"new.txt", "old.txt", "link.txt", "dir"} {
				t.Run(m.name+"/"+pb.name+"/"+name, func(t *testing.T) {
					base := t.TempDir()
					ws, out := filepath.Join(base, "ws"), filepath.Join(base, "out")
					fixture.Build(t, ws, "d/old.txt: old\n", "d/dir/", "d/link.txt => old.txt")
					fixture.Build(t, out, "keep: x")
					d, err := dirfd.OpenBeneath(ws)
					require.NoError(t, err)
					defer func() { assert.NoError(t, d.Close()) }()
					p, _, err := d.OpenParent("d", false)
					require.NoError(t, err)
					defer func() { assert.NoError(t, p.Close()) }()
					require.NoError(t, os.Rename(filepath.Join(ws, "d"), filepath.Join(out, "d")))
					before := fixture.Snapshot(t, out)
					var st unix.Stat_t
					require.NoError(t, unix.Lstat(filepath.Join(out, "d", "old.txt"), &st))

					err = exec.Run(context.Background(), []string{ws}, func() error {
						_, err := Write(context.Background(), Request{
							Parent: p, Name: name, Content: "escaped\n", Publication: pb.pub,
							Confined: true, noUnnamed: m.staged,
						})
						return err
					})
					require.Error(t, err, "a write into a directory outside the domain")
					assert.Equal(t, before, fixture.Snapshot(t, out), "the moved directory changed")
					assert.Empty(t, fixture.Residue(t, out))
					var now unix.Stat_t
					require.NoError(t, unix.Lstat(filepath.Join(out, "d", "old.txt"), &now))
					assert.Equal(t, st.Mode, now.Mode, "mode of old.txt")
					assert.Equal(t, st.Uid, now.Uid, "owner of old.txt")
					assert.Equal(t, st.Ino, now.Ino, "old.txt replaced")
					assert.Equal(t, st.Mtim, now.Mtim, "old.txt rewritten")
				})
			}
		}
	}
}

// The same, with the directory moved out mid-write: after the temp file is
// staged (AfterStage) and before publication, where a Confined write no
// longer checks the parent's path. The link, the rename and the in-place
// last resort must all be refused by the domain: no target name in the
// moved directory changes. A staging entry made while the directory was
// inside may stay behind (a documented limit), so staging names are left
// out of the comparison.
func TestWrite_ConfinedParentMovedOutMidWrite(t *testing.T) {
	exec, err := landlock.New(landlock.Config{})
	if ue, ok := errors.AsType[*landlock.UnavailableError](err); ok {
		t.Skipf("Landlock is unavailable here: %v", ue)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = exec.Close() })
	for _, m := range mechanisms {
		for _, pb := range publications {
			for _, name := range []string{"new.txt", "old.txt", "link.txt"} {
				t.Run(m.name+"/"+pb.name+"/"+name, func(t *testing.T) {
					base := t.TempDir()
					ws, out := filepath.Join(base, "ws"), filepath.Join(base, "out")
					fixture.Build(t, ws, "d/old.txt: old\n", "d/link.txt => old.txt")
					fixture.Build(t, out, "keep: x")
					d, err := dirfd.OpenBeneath(ws)
					require.NoError(t, err)
					defer func() { assert.NoError(t, d.Close()) }()
					p, _, err := d.OpenParent("d", false)
					require.NoError(t, err)
					defer func() { assert.NoError(t, p.Close()) }()
					var st unix.Stat_t
					require.NoError(t, unix.Lstat(filepath.Join(ws, "d", "old.txt"), &st))
					before := withoutStaging(fixture.Snapshot(t, ws))
					moved := false
					err = exec.Run(context.Background(), []string{ws}, func() error {
						_, err := Write(context.Background(), Request{
							Parent: p, Name: name, Content: "escaped\n", Publication: pb.pub,
							Confined: true, noUnnamed: m.staged,
							AfterStage: func(string, string) {
								// On another thread: the domain would refuse this rename.
								done := make(chan bool)
								go func() { done <- os.Rename(filepath.Join(ws, "d"), filepath.Join(out, "d")) == nil }()
								moved = <-done
							},
						})
						return err
					})
					require.True(t, moved, "the directory was moved out mid-write")
					require.Error(t, err, "a publication into a directory outside the domain")
					require.NoError(t, os.Rename(filepath.Join(out, "d"), filepath.Join(ws, "d")))
					assert.Equal(t, before, withoutStaging(fixture.Snapshot(t, ws)), "the directory changed while outside")
					var now unix.Stat_t
					require.NoError(t, unix.Lstat(filepath.Join(ws, "d", "old.txt"), &now))
					assert.Equal(t, st.Ino, now.Ino, "old.txt replaced")
					assert.Equal(t, st.Mtim, now.Mtim, "old.txt rewritten")
				})
			}
		}
	}
}

// withoutStaging drops staging entries from a snapshot.
func withoutStaging(snap map[string]string) map[string]string {
	for k := range snap {
		b := filepath.Base(k)
		if filepath.Ext(b) == ".tmp" || filepath.Ext(b) == ".tmpdir" || filepath.Ext(filepath.Dir(k)) == ".tmpdir" {
			delete(snap, k)
		}
	}
	return snap
}
