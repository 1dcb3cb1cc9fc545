//go:build linux

package fssandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
)

// otherUID owns the planted links and files: a user that is not the process.
const otherUID = 12345

// TestProtectedSymlinks is issue 12's fifth escape: on a host with
// fs.protected_symlinks=0, a symlink another user planted in a sticky,
// world-writable directory (/tmp) was followed by a write, overwriting that
// user's file. The fence applies the kernel's rule itself, in every mode that
// writes: such a link is followed only when it is owned by the process's user
// or by the directory's owner.
func TestProtectedSymlinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("planting another user's link and file needs root (chown)")
	}
	cases := []struct {
		name string
		path string // relative to the sticky directory
		// linkOwner and dirOwner are the uids of the links and of the
		// sticky directory; -1 keeps the process's.
		linkOwner, dirOwner int
		refused             bool
	}{
		{"another user's link to that user's file is refused", "link", otherUID, -1, true},
		{"another user's link as an intermediate directory is refused", "dirlink/victim.txt", otherUID, -1, true},
		{"a chain through another user's link is refused", "mine-to-theirs", otherUID, -1, true},
		{"the process's own link is followed", "link", -1, -1, false},
		{"a link owned by the directory's owner is followed", "link", otherUID, otherUID, false},
	}
	for _, mode := range []sandbox.Mode{sandbox.WorkspaceWrite, sandbox.DangerFullAccess} {
		for _, tc := range cases {
			t.Run(string(mode)+"/"+tc.name, func(t *testing.T) {
				w := newWorld(t)
				sticky := filepath.Join(w.ws, "shared")
				victimDir := filepath.Join(w.ws, "home")
				fixture.Build(t, w.ws, "shared/", "home/victim.txt: the other user's data")
				require.NoError(t, os.Chmod(sticky, 0o1777|os.ModeSticky))
				require.NoError(t, os.Chown(filepath.Join(victimDir, "victim.txt"), otherUID, otherUID))
				fixture.Build(t, sticky,
					"link => "+filepath.Join(victimDir, "victim.txt"),
					"dirlink => "+victimDir,
					"theirs => "+filepath.Join(victimDir, "victim.txt"),
					"mine-to-theirs => theirs",
				)
				for _, l := range []string{"link", "dirlink", "theirs"} {
					if tc.linkOwner >= 0 {
						require.NoError(t, os.Lchown(filepath.Join(sticky, l), tc.linkOwner, tc.linkOwner))
					}
				}
				if tc.dirOwner >= 0 {
					require.NoError(t, os.Chown(sticky, tc.dirOwner, tc.dirOwner))
				}
				f := w.sandbox(t, mode)
				before := fixture.Snapshot(t, w.base)

				for _, m := range mutations {
					tg, err := f.Resolve(context.Background(), filepath.Join(sticky, tc.path), fs.ResolveOptions{})
					require.NoError(t, err)
					err = m.run(context.Background(), f, tg)
					if !tc.refused {
						if m.name == "write" {
							require.NoError(t, err, "the link is followed")
						}
						continue
					}
					require.ErrorIs(t, err, fs.ErrPermissionDenied, m.name)
					assert.Contains(t, err.Error(), "protected_symlinks", m.name)
					assert.Contains(t, err.Error(), "owned by uid 12345", m.name)
				}
				if tc.refused {
					assert.Equal(t, before, fixture.Snapshot(t, w.base), "nothing changed on disk")
					assert.Equal(t, "the other user's data", readFile(t, filepath.Join(victimDir, "victim.txt")))
				} else {
					assert.Equal(t, "pwned", readFile(t, filepath.Join(victimDir, "victim.txt")), "the write went through the link")
				}
			})
		}
	}
}
