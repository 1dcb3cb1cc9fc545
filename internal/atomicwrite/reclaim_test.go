//go:build linux

package atomicwrite_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/atomicwrite"
	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/fixture"
)

const uuid0 = "00000000-0000-0000-0000-000000000000"

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

// TestReclaim: only what a killed writer leaves is removed; anything that
// could be someone else's data stays, and no symlink is ever followed.
func TestReclaim(t *testing.T) {
	dead := strconv.Itoa(deadPID(t))
	self := strconv.Itoa(os.Getpid())
	staging := func(base, pid string) string { return "." + base + "." + pid + "." + uuid0 + ".tmpdir" }
	tempLink := func(base, pid string) string { return "." + base + "." + pid + "." + uuid0 + ".tmp" }
	cases := []struct {
		name    string
		build   func(t *testing.T, dir, outside string) string // returns the staging name
		reclaim bool
	}{
		{"an abandoned staging directory with its temp file is removed", func(t *testing.T, dir, _ string) string {
			n := staging("a.txt", dead)
			require.NoError(t, os.Mkdir(filepath.Join(dir, n), 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(dir, n, "a.txt.tmp"), []byte("partial"), 0o600))
			return n
		}, true},
		{"an empty abandoned staging directory is removed", func(t *testing.T, dir, _ string) string {
			n := staging("b.txt", dead)
			require.NoError(t, os.Mkdir(filepath.Join(dir, n), 0o700))
			return n
		}, true},
		{"a staging-named symlink is never followed", func(t *testing.T, dir, outside string) string {
			n := staging("c.txt", dead)
			require.NoError(t, os.Symlink(outside, filepath.Join(dir, n)))
			return n
		}, false},
		{"a staging directory of a live process stays", func(t *testing.T, dir, _ string) string {
			n := staging("d.txt", "1") // init is always alive
			require.NoError(t, os.Mkdir(filepath.Join(dir, n), 0o700))
			return n
		}, false},
		{"this process's own staging directory stays", func(t *testing.T, dir, _ string) string {
			n := staging("e.txt", self)
			require.NoError(t, os.Mkdir(filepath.Join(dir, n), 0o700))
			return n
		}, false},
		{"a staging directory holding anything else stays", func(t *testing.T, dir, _ string) string {
			n := staging("f.txt", dead)
			require.NoError(t, os.Mkdir(filepath.Join(dir, n), 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(dir, n, "precious"), []byte("keep"), 0o600))
			return n
		}, false},
		{"a staging directory holding a subdirectory stays", func(t *testing.T, dir, _ string) string {
			n := staging("g.txt", dead)
			require.NoError(t, os.MkdirAll(filepath.Join(dir, n, "sub"), 0o700))
			return n
		}, false},
		{"a staging-named directory that is not private stays", func(t *testing.T, dir, _ string) string {
			n := staging("h.txt", dead)
			require.NoError(t, os.Mkdir(filepath.Join(dir, n), 0o700))
			require.NoError(t, os.Chmod(filepath.Join(dir, n), 0o755))
			return n
		}, false},
		{"a staging directory whose temp file is a symlink stays", func(t *testing.T, dir, outside string) string {
			n := staging("i.txt", dead)
			require.NoError(t, os.Mkdir(filepath.Join(dir, n), 0o700))
			require.NoError(t, os.Symlink(filepath.Join(outside, "victim"), filepath.Join(dir, n, "i.txt.tmp")))
			return n
		}, false},
		{"an abandoned temporary name of an unnamed file is removed", func(t *testing.T, dir, _ string) string {
			n := tempLink("k.txt", dead)
			require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("whole"), 0o644))
			return n
		}, true},
		{"a temporary name of a live process stays", func(t *testing.T, dir, _ string) string {
			n := tempLink("l.txt", "1")
			require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("whole"), 0o644))
			return n
		}, false},
		{"this process's own temporary name stays", func(t *testing.T, dir, _ string) string {
			n := tempLink("m.txt", self)
			require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("whole"), 0o644))
			return n
		}, false},
		{"a temporary-named symlink is never followed", func(t *testing.T, dir, outside string) string {
			n := tempLink("n.txt", dead)
			require.NoError(t, os.Symlink(filepath.Join(outside, "victim"), filepath.Join(dir, n)))
			return n
		}, false},
		{"a temporary-named file with another link stays", func(t *testing.T, dir, _ string) string {
			n := tempLink("o.txt", dead)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "o.txt"), []byte("data"), 0o644))
			require.NoError(t, os.Link(filepath.Join(dir, "o.txt"), filepath.Join(dir, n)))
			return n
		}, false},
		{"a temporary-named directory stays", func(t *testing.T, dir, _ string) string {
			n := tempLink("p.txt", dead)
			require.NoError(t, os.Mkdir(filepath.Join(dir, n), 0o700))
			return n
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base, err := filepath.EvalSymlinks(t.TempDir())
			require.NoError(t, err)
			dir, outside := filepath.Join(base, "dir"), filepath.Join(base, "outside")
			fixture.Build(t, base, "dir/", "outside/victim: data", "outside/other: more")
			name := tc.build(t, dir, outside)
			outsideBefore := fixture.Snapshot(t, outside)
			for _, confined := range []bool{false, true} {
				var p *dirfd.Parent
				if confined {
					d, err := dirfd.OpenBeneath(dir)
					require.NoError(t, err)
					defer d.Close() //nolint:errcheck // test cleanup
					p, _, err = d.OpenParent("", false)
					require.NoError(t, err)
				} else {
					rel, _ := dirfd.Host().Rel(dir)
					p, _, err = dirfd.Host().OpenParent(rel, false)
					require.NoError(t, err)
				}
				n, err := atomicwrite.Reclaim(p)
				require.NoError(t, err)
				require.NoError(t, p.Close())
				_, statErr := os.Lstat(filepath.Join(dir, name))
				if tc.reclaim {
					if !confined { // the first pass reclaims; the second finds nothing
						assert.Equal(t, 1, n)
					}
					assert.True(t, os.IsNotExist(statErr), "the staging directory is gone")
				} else {
					assert.Zero(t, n)
					assert.NoError(t, statErr, "the entry stays")
				}
			}
			assert.Equal(t, outsideBefore, fixture.Snapshot(t, outside), "nothing outside changed")
		})
	}
}

// TestReclaimSkipsALockedDirectory: a staging directory whose flock is held
// (a live writer, even one whose pid cannot be probed) stays.
func TestReclaimSkipsALockedDirectory(t *testing.T) {
	dir := t.TempDir()
	n := "." + "j.txt." + strconv.Itoa(deadPID(t)) + "." + uuid0 + ".tmpdir"
	require.NoError(t, os.Mkdir(filepath.Join(dir, n), 0o700))
	fd, err := unix.Open(filepath.Join(dir, n), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	require.NoError(t, err)
	defer unix.Close(fd) //nolint:errcheck // test cleanup
	require.NoError(t, unix.Flock(fd, unix.LOCK_EX))
	rel, _ := dirfd.Host().Rel(dir)
	p, _, err := dirfd.Host().OpenParent(rel, false)
	require.NoError(t, err)
	defer p.Close() //nolint:errcheck // test cleanup
	removed, err := atomicwrite.Reclaim(p)
	require.NoError(t, err)
	assert.Zero(t, removed)
	assert.DirExists(t, filepath.Join(dir, n))
}

// TestReclaimSkipsALockedTemporaryName: a temporary name whose file's flock
// is held (a writer between link and rename) stays.
func TestReclaimSkipsALockedTemporaryName(t *testing.T) {
	dir := t.TempDir()
	n := "." + "q.txt." + strconv.Itoa(deadPID(t)) + "." + uuid0 + ".tmp"
	require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("whole"), 0o644))
	fd, err := unix.Open(filepath.Join(dir, n), unix.O_RDONLY, 0)
	require.NoError(t, err)
	defer unix.Close(fd) //nolint:errcheck // test cleanup
	require.NoError(t, unix.Flock(fd, unix.LOCK_EX))
	rel, _ := dirfd.Host().Rel(dir)
	p, _, err := dirfd.Host().OpenParent(rel, false)
	require.NoError(t, err)
	defer p.Close() //nolint:errcheck // test cleanup
	removed, err := atomicwrite.Reclaim(p)
	require.NoError(t, err)
	assert.Zero(t, removed)
	assert.FileExists(t, filepath.Join(dir, n))
}
