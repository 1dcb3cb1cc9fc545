//go:build linux

package atomicwrite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/fixture"
)

// env is one test layout: the target directory dir (root/sub) opened as p;
// staged says the write is to use the staging fallback.
type env struct {
	root, dir string
	p         *dirfd.Parent
	staged    bool
}

// umask is the process umask, read once (setting it back at once).
var umask = func() int {
	m := unix.Umask(0)
	unix.Umask(m)
	return m
}()

// newPerm is the mode of a new file under the process umask (spec
// difference 9).
var newPerm = os.FileMode(0o666 &^ umask)

// mechanisms are the two ways a temp file is made: unnamed in the parent
// (O_TMPFILE), and the staging fallback for filesystems that refuse it.
var mechanisms = []struct {
	name   string
	staged bool
}{
	{"unnamed", false},
	{"staged", true},
}

// target returns the absolute path of the target "a.txt".
func (e env) target() string { return filepath.Join(e.dir, "a.txt") }

// parentKinds are the two ways a Parent reaches Write: the unconfined host
// handle and a handle confined beneath the root (docs/design.md "The fence":
// one implementation against either handle).
var parentKinds = []struct {
	name string
	open func(t *testing.T, root string) *dirfd.Parent
}{
	{"host", func(t *testing.T, root string) *dirfd.Parent {
		fixture.Build(t, root, "sub/")
		rel, ok := dirfd.Host().Rel(filepath.Join(root, "sub"))
		require.True(t, ok)
		p, _, err := dirfd.Host().OpenParent(rel, false)
		require.NoError(t, err)
		return p
	}},
	{"confined", func(t *testing.T, root string) *dirfd.Parent {
		d, err := dirfd.OpenBeneath(root)
		require.NoError(t, err)
		defer func() { require.NoError(t, d.Close()) }()
		p, created, err := d.OpenParent("sub", true)
		require.NoError(t, err)
		require.Equal(t, 1, created)
		return p
	}},
}

// forEachParent runs f once per parent kind on a fresh layout whose sub
// directory holds specs, and checks afterwards that no staging entry is left
// unless f says it expects one.
func forEachParent(t *testing.T, specs []string, f func(t *testing.T, e env)) {
	t.Helper()
	for _, m := range mechanisms {
		t.Run(m.name, func(t *testing.T) { forEachKind(t, m.staged, specs, f) })
	}
}

// forEachStagedParent is forEachParent for the staging fallback alone.
func forEachStagedParent(t *testing.T, specs []string, f func(t *testing.T, e env)) {
	t.Helper()
	forEachKind(t, true, specs, f)
}

func forEachKind(t *testing.T, staged bool, specs []string, f func(t *testing.T, e env)) {
	t.Helper()
	for _, k := range parentKinds {
		t.Run(k.name, func(t *testing.T) {
			root := t.TempDir()
			e := env{root: root, dir: filepath.Join(root, "sub"), staged: staged}
			e.p = k.open(t, root)
			t.Cleanup(func() { assert.NoError(t, e.p.Close()) })
			fixture.Build(t, e.dir, specs...)
			f(t, e)
		})
	}
}

func noResidue(t *testing.T, e env) {
	t.Helper()
	assert.Empty(t, fixture.Residue(t, e.root), "no staging residue")
	entries, err := os.ReadDir(e.dir)
	require.NoError(t, err)
	for _, de := range entries {
		assert.NotContains(t, de.Name(), ".tmp", "no .tmp names in the target directory (L-78)")
	}
}

// assertFreshStat checks that got matches a fresh lstat of p: same inode,
// size, mode, link count and timestamps.
func assertFreshStat(t *testing.T, got unix.Stat_t, p string) {
	t.Helper()
	var want unix.Stat_t
	require.NoError(t, unix.Lstat(p, &want))
	assert.Equal(t, want.Dev, got.Dev, "dev")
	assert.Equal(t, want.Ino, got.Ino, "ino")
	assert.Equal(t, want.Mode, got.Mode, "mode")
	assert.Equal(t, want.Nlink, got.Nlink, "nlink")
	assert.Equal(t, want.Size, got.Size, "size")
	assert.Equal(t, want.Mtim, got.Mtim, "mtime")
	assert.Equal(t, want.Ctim, got.Ctim, "ctime")
}

func assertAbsent(t *testing.T, p string) {
	t.Helper()
	_, err := os.Lstat(p)
	assert.ErrorIs(t, err, os.ErrNotExist, "%s must not exist", p)
}

func assertFile(t *testing.T, p, content string, perm os.FileMode) {
	t.Helper()
	st, err := os.Lstat(p)
	require.NoError(t, err)
	assert.True(t, st.Mode().IsRegular(), "%s is a regular file", p)
	assert.Equal(t, perm, st.Mode().Perm(), "mode of %s", p)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, content, string(b), "content of %s", p)
}

var publications = []struct {
	name string
	pub  Publication
}{
	{"replace", Replace},
	{"create-only", CreateOnly},
}

func TestWrite_ContentWrittenExactly(t *testing.T) {
	contents := []struct {
		name    string
		content string
	}{
		{"empty string", ""},
		{"CRLF kept as given (Z-4, L-66)", "a\r\nb\r\nc\r\n"},
		{"NUL bytes kept", "x\x00y\x00\x00z"},
		{"no trailing newline", "last line"},
		{"multi-byte UTF-8", "你好吗\n"},
		{"1 MiB", strings.Repeat("0123456789abcdef", 1<<16)},
	}
	for _, pb := range publications {
		for _, c := range contents {
			t.Run(pb.name+"/"+c.name, func(t *testing.T) {
				forEachParent(t, nil, func(t *testing.T, e env) {
					res, err := Write(context.Background(), Request{
						Parent: e.p, Name: "a.txt", Content: c.content, noUnnamed: e.staged, Publication: pb.pub,
					})
					require.NoError(t, err)
					assert.NoError(t, res.Residue)
					assertFile(t, e.target(), c.content, newPerm)
					assertFreshStat(t, res.Stat, e.target())
					assert.Equal(t, uint64(1), res.Stat.Nlink, "temp name is gone; only the target links the inode")
					names, err := e.p.Names()
					require.NoError(t, err)
					assert.Equal(t, []string{"a.txt"}, names, "only the target is left in the parent")
					noResidue(t, e)
				})
			})
		}
	}
}

func TestWrite_ReplaceExistingFile(t *testing.T) {
	forEachParent(t, []string{"a.txt: old content"}, func(t *testing.T, e env) {
		require.NoError(t, os.Chmod(e.target(), 0o640))
		before, err := os.Lstat(e.target())
		require.NoError(t, err)

		res, err := Write(context.Background(), Request{
			Parent: e.p, Name: "a.txt", Content: "new", noUnnamed: e.staged, Publication: Replace,
		})
		require.NoError(t, err)
		assert.NoError(t, res.Residue)
		assertFile(t, e.target(), "new", 0o640) // L-78
		assertFreshStat(t, res.Stat, e.target())
		after, err := os.Lstat(e.target())
		require.NoError(t, err)
		assert.False(t, os.SameFile(before, after), "published by rename: a new inode")
		noResidue(t, e)
	})
}

func TestWrite_L77_StagingModesDuringStaging(t *testing.T) {
	stagingRe := regexp.MustCompile(`^\.a\.txt\.` + strconv.Itoa(os.Getpid()) +
		`\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.tmpdir$`)
	for _, pb := range publications {
		t.Run(pb.name, func(t *testing.T) {
			forEachStagedParent(t, nil, func(t *testing.T, e env) {
				var (
					called              bool
					stagingDir, tmpFile string
					dirInfo, fileInfo   os.FileInfo
					dirErr, fileErr     error
					tempContent         []byte
					stagingNames        []string
				)
				_, err := Write(context.Background(), Request{
					Parent: e.p, Name: "a.txt", Content: "staged", noUnnamed: e.staged, Publication: pb.pub,
					AfterStage: func(sd, tf string) {
						called, stagingDir, tmpFile = true, sd, tf
						dirInfo, dirErr = os.Lstat(sd)
						fileInfo, fileErr = os.Lstat(tf)
						tempContent, _ = os.ReadFile(tf)
						if des, err := os.ReadDir(sd); err == nil {
							for _, de := range des {
								stagingNames = append(stagingNames, de.Name())
							}
						}
					},
				})
				require.NoError(t, err)
				require.True(t, called, "AfterStage runs")

				require.NoError(t, dirErr)
				assert.True(t, dirInfo.IsDir(), "staging is a directory")
				assert.Equal(t, os.FileMode(0o700), dirInfo.Mode().Perm(), "staging dir mode 0700")
				assert.Equal(t, e.dir, filepath.Dir(stagingDir), "staging dir is a sibling of the target")
				assert.Regexp(t, stagingRe, filepath.Base(stagingDir), "staging name .<base>.<pid>.<uuid>.tmpdir")

				require.NoError(t, fileErr)
				assert.True(t, fileInfo.Mode().IsRegular(), "temp is a regular file")
				assert.Equal(t, newPerm, fileInfo.Mode().Perm(), "temp file mode 0666 less the umask (spec difference 9)")
				assert.Equal(t, filepath.Join(stagingDir, "a.txt.tmp"), tmpFile, "temp name <base>.tmp inside staging")
				assert.Equal(t, "staged", string(tempContent), "temp holds the whole content before publication")
				assert.Equal(t, []string{"a.txt.tmp"}, stagingNames)

				assertAbsent(t, stagingDir)
				assertFile(t, e.target(), "staged", newPerm)
				noResidue(t, e)
			})
		})
	}
}

// Spec difference 9 (supersedes L-79): a new file is created 0666 and the
// kernel applies the umask, for an unnamed file as for a staged one.
func TestWrite_NewFileModeFollowsUmask(t *testing.T) {
	cases := []struct {
		name  string
		umask int
		perm  os.FileMode
	}{
		{"new file is 0644 under umask 022", 0o022, 0o644},
		{"new file is 0666 under umask 0", 0, 0o666},
		{"new file is 0600 under umask 077", 0o077, 0o600},
	}
	for _, pb := range publications {
		for _, c := range cases {
			t.Run(pb.name+"/"+c.name, func(t *testing.T) {
				old := unix.Umask(c.umask)
				defer unix.Umask(old)
				forEachParent(t, nil, func(t *testing.T, e env) {
					res, err := Write(context.Background(), Request{
						Parent: e.p, Name: "a.txt", Content: "x", noUnnamed: e.staged, Publication: pb.pub,
					})
					require.NoError(t, err)
					assertFile(t, e.target(), "x", c.perm)
					assert.Equal(t, uint32(c.perm), res.Stat.Mode&0o777)
					noResidue(t, e)
				})
			})
		}
	}
}

func TestWrite_L80_StagingNameCollisionIsRawEEXIST(t *testing.T) {
	const staging = ".a.txt.fixed.tmpdir"
	for _, pb := range publications {
		t.Run(pb.name, func(t *testing.T) {
			forEachStagedParent(t, []string{staging + "/keep: precious"}, func(t *testing.T, e env) {
				stagingPath := filepath.Join(e.dir, staging)
				before := fixture.Snapshot(t, stagingPath)
				called := false

				_, err := Write(context.Background(), Request{
					Parent: e.p, Name: "a.txt", Content: "x", noUnnamed: e.staged, Publication: pb.pub,
					AfterStage:  func(string, string) { called = true },
					stagingName: staging,
				})
				require.ErrorIs(t, err, unix.EEXIST)
				var pe *os.PathError
				require.ErrorAs(t, err, &pe, "a raw *os.PathError")
				assert.Equal(t, "mkdir", pe.Op)
				var ce *CollisionError
				assert.NotErrorAs(t, err, &ce, "a staging collision is not a target collision")
				assert.False(t, called)

				assert.Equal(t, before, fixture.Snapshot(t, stagingPath), "pre-existing staging contents untouched")
				assertAbsent(t, e.target())
				assert.Equal(t, []string{stagingPath}, fixture.Residue(t, e.root), "only the pre-existing staging dir")
			})
		})
	}
}

func TestWrite_L83_ReplaceOntoDirectoryFails(t *testing.T) {
	forEachParent(t, []string{"a.txt/inner: kept"}, func(t *testing.T, e env) {
		before := fixture.Snapshot(t, e.dir)
		_, err := Write(context.Background(), Request{
			Parent: e.p, Name: "a.txt", Content: "x", noUnnamed: e.staged, Publication: Replace,
		})
		require.ErrorIs(t, err, unix.EISDIR)
		var le *os.LinkError
		assert.ErrorAs(t, err, &le)
		assert.Equal(t, before, fixture.Snapshot(t, e.dir), "directory preserved")
		noResidue(t, e)
	})
}

func TestWrite_L84_LinkFailsWithNonCollisionError(t *testing.T) {
	forEachParent(t, nil, func(t *testing.T, e env) {
		var gotOld, gotNew string
		var gotNewFD int
		_, err := Write(context.Background(), Request{
			Parent: e.p, Name: "a.txt", Content: "x", noUnnamed: e.staged, Publication: CreateOnly,
			link: func(_ int, oldname string, newfd int, newname string, _ int) error {
				gotOld, gotNewFD, gotNew = oldname, newfd, newname
				return unix.EIO
			},
		})
		require.ErrorIs(t, err, unix.EIO, "the link error is the cause")
		var ce *CollisionError
		assert.NotErrorAs(t, err, &ce)
		if e.staged {
			assert.Equal(t, "a.txt.tmp", gotOld)
		} else {
			assert.Regexp(t, `^/proc/self/fd/[0-9]+$`, gotOld, "an unnamed file links from its descriptor")
		}
		assert.Equal(t, e.p.FD(), gotNewFD, "links into the parent")
		assert.Equal(t, "a.txt", gotNew)
		assertAbsent(t, e.target())
		noResidue(t, e)
	})
}

func TestWrite_L85_InspectionErrorIsTheCause(t *testing.T) {
	forEachParent(t, nil, func(t *testing.T, e env) {
		var inspected string
		_, err := Write(context.Background(), Request{
			Parent: e.p, Name: "a.txt", Content: "x", noUnnamed: e.staged, Publication: CreateOnly,
			link: func(int, string, int, string, int) error { return unix.EIO },
			lstat: func(p *dirfd.Parent, name string) (unix.Stat_t, error) {
				inspected = name
				return unix.Stat_t{}, &os.PathError{Op: "lstat", Path: p.Join(name), Err: unix.EACCES}
			},
		})
		require.ErrorIs(t, err, unix.EACCES, "the inspection error is the cause")
		var ce *CollisionError
		assert.NotErrorAs(t, err, &ce)
		assert.Equal(t, "a.txt", inspected)
		assertAbsent(t, e.target())
		noResidue(t, e)
	})
}

func TestWrite_L86_EEXISTButTargetVanishedIsCollision(t *testing.T) {
	forEachParent(t, nil, func(t *testing.T, e env) {
		before := fixture.Snapshot(t, e.dir)
		_, err := Write(context.Background(), Request{
			Parent: e.p, Name: "a.txt", Content: "x", noUnnamed: e.staged, Publication: CreateOnly,
			link: func(int, string, int, string, int) error { return unix.EEXIST },
		})
		var ce *CollisionError
		require.ErrorAs(t, err, &ce)
		assert.True(t, ce.Regular, "a vanished entry counts as a regular-file collision")
		assert.ErrorIs(t, err, unix.EEXIST, "the link error is the cause")
		assertAbsent(t, e.target())
		assert.Equal(t, before, fixture.Snapshot(t, e.dir), "nothing created")
		noResidue(t, e)
	})
}

func TestWrite_CreateOnlyCollisions(t *testing.T) {
	cases := []struct {
		name       string
		specs      []string                  // built before Write
		competitor func(t *testing.T, e env) // run in AfterStage
		check      func(t *testing.T, e env) // the target after
		regular    bool
	}{
		{
			name:    "existing regular file is a regular collision (L-54)",
			specs:   []string{"a.txt: prior"},
			check:   func(t *testing.T, e env) { assertFile(t, e.target(), "prior", 0o644) },
			regular: true,
		},
		{
			name: "competitor file appearing mid-staging is a regular collision, preserved (L-87, L-55)",
			competitor: func(t *testing.T, e env) {
				assert.NoError(t, os.WriteFile(e.target(), []byte("competitor"), 0o644))
			},
			check:   func(t *testing.T, e env) { assertFile(t, e.target(), "competitor", 0o644) },
			regular: true,
		},
		{
			name: "competitor dir appearing mid-staging is a non-regular collision, preserved (L-87, L-57)",
			competitor: func(t *testing.T, e env) {
				assert.NoError(t, os.Mkdir(e.target(), 0o755))
				assert.NoError(t, os.WriteFile(filepath.Join(e.target(), "inner"), []byte("in"), 0o644))
			},
			check: func(t *testing.T, e env) {
				st, err := os.Lstat(e.target())
				require.NoError(t, err)
				assert.True(t, st.IsDir())
				assertFile(t, filepath.Join(e.target(), "inner"), "in", 0o644)
			},
		},
		{
			name:  "dangling symlink is a non-regular collision; link preserved and still dangling (L-58)",
			specs: []string{"a.txt => missing-dest"},
			check: func(t *testing.T, e env) {
				dest, err := os.Readlink(e.target())
				require.NoError(t, err)
				assert.Equal(t, "missing-dest", dest)
				_, err = os.Stat(e.target())
				assert.ErrorIs(t, err, os.ErrNotExist, "still dangling")
				assertAbsent(t, filepath.Join(e.dir, "missing-dest"))
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachParent(t, c.specs, func(t *testing.T, e env) {
				_, err := Write(context.Background(), Request{
					Parent: e.p, Name: "a.txt", Content: "mine", noUnnamed: e.staged, Publication: CreateOnly,
					AfterStage: func(string, string) {
						if c.competitor != nil {
							c.competitor(t, e)
						}
					},
				})
				var ce *CollisionError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, c.regular, ce.Regular)
				assert.ErrorIs(t, err, unix.EEXIST)
				c.check(t, e)
				noResidue(t, e)
			})
		})
	}
}

// Z-2: an unconditional write onto a dangling symlink replaces the link
// itself; the link's destination is not created.
func TestWrite_Z2_ReplaceOntoDanglingSymlinkReplacesTheLink(t *testing.T) {
	forEachParent(t, []string{"a.txt => missing-dest"}, func(t *testing.T, e env) {
		res, err := Write(context.Background(), Request{
			Parent: e.p, Name: "a.txt", Content: "replaced", noUnnamed: e.staged, Publication: Replace,
		})
		require.NoError(t, err)
		assertFile(t, e.target(), "replaced", newPerm)
		assertFreshStat(t, res.Stat, e.target())
		assertAbsent(t, filepath.Join(e.dir, "missing-dest"))
		noResidue(t, e)
	})
}

func TestWrite_L88_CleanupFailureAfterPublicationIsSwallowed(t *testing.T) {
	for _, pb := range publications {
		t.Run(pb.name, func(t *testing.T) {
			forEachStagedParent(t, nil, func(t *testing.T, e env) {
				var stagingDir string
				res, err := Write(context.Background(), Request{
					Parent: e.p, Name: "a.txt", Content: "published", noUnnamed: e.staged, Publication: pb.pub,
					AfterStage: func(sd, _ string) {
						stagingDir = sd
						// An extra entry makes the final rmdir fail (ENOTEMPTY).
						assert.NoError(t, os.WriteFile(filepath.Join(sd, "intruder"), nil, 0o600))
					},
				})
				require.NoError(t, err, "the write resolves successfully")
				require.Error(t, res.Residue, "the cleanup failure is reported as residue")
				assert.ErrorIs(t, res.Residue, unix.ENOTEMPTY)
				assertFile(t, e.target(), "published", newPerm)
				assertFreshStat(t, res.Stat, e.target())
				assert.Equal(t, []string{stagingDir}, fixture.Residue(t, e.root),
					"only the staging dir with the intruder remains; its temp file is gone")
				names, err := os.ReadDir(stagingDir)
				require.NoError(t, err)
				require.Len(t, names, 1)
				assert.Equal(t, "intruder", names[0].Name())
			})
		})
	}
}

func TestWrite_Cancellation(t *testing.T) {
	t.Run("cancelled before Write: ctx error, nothing created (L-82, L-74)", func(t *testing.T) {
		forEachParent(t, nil, func(t *testing.T, e env) {
			before := fixture.Snapshot(t, e.root)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			called := false
			_, err := Write(ctx, Request{
				Parent: e.p, Name: "a.txt", Content: "x", noUnnamed: e.staged, Publication: Replace,
				AfterStage: func(string, string) { called = true },
			})
			require.ErrorIs(t, err, context.Canceled)
			assert.False(t, called)
			assert.Equal(t, before, fixture.Snapshot(t, e.root), "nothing created, not even staging")
			noResidue(t, e)
		})
	})
	for _, pb := range publications {
		t.Run("cancelled during staging: not published, staging removed/"+pb.name, func(t *testing.T) {
			forEachParent(t, []string{"other: untouched"}, func(t *testing.T, e env) {
				before := fixture.Snapshot(t, e.root)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				_, err := Write(ctx, Request{
					Parent: e.p, Name: "a.txt", Content: "x", noUnnamed: e.staged, Publication: pb.pub,
					AfterStage: func(string, string) { cancel() },
				})
				require.ErrorIs(t, err, context.Canceled)
				assertAbsent(t, e.target())
				assert.Equal(t, before, fixture.Snapshot(t, e.root))
				noResidue(t, e)
			})
		})
	}
	t.Run("cancelled during staging of a replace keeps the old file", func(t *testing.T) {
		forEachParent(t, []string{"a.txt: old"}, func(t *testing.T, e env) {
			before := fixture.Snapshot(t, e.root)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, err := Write(ctx, Request{
				Parent: e.p, Name: "a.txt", Content: "new", noUnnamed: e.staged, Publication: Replace,
				AfterStage: func(string, string) { cancel() },
			})
			require.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, before, fixture.Snapshot(t, e.root))
			noResidue(t, e)
		})
	})
}

// Through a confined parent, the staging directory, temp file and published
// file all land in the parent even when an in-root symlink points out.
func TestWrite_ConfinedParentNeverTouchesOutside(t *testing.T) {
	root := t.TempDir()
	outside := fixture.OutsideDir(t)
	fixture.Build(t, outside, "a.txt: outside")
	fixture.Build(t, root, "sub/", "sub/lnk => "+outside)
	before := fixture.Snapshot(t, outside)

	d, err := dirfd.OpenBeneath(root)
	require.NoError(t, err)
	defer func() { assert.NoError(t, d.Close()) }()
	_, _, err = d.OpenParent("sub/lnk", true)
	require.True(t, dirfd.IsEscape(err), "the parent itself cannot be opened through the link: %v", err)

	p, _, err := d.OpenParent("sub", false)
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()
	for _, pb := range publications {
		name := pb.name + ".txt"
		res, err := Write(context.Background(), Request{
			Parent: p, Name: name, Content: pb.name, Publication: pb.pub,
		})
		require.NoError(t, err)
		assertFile(t, filepath.Join(root, "sub", name), pb.name, newPerm)
		assertFreshStat(t, res.Stat, filepath.Join(root, "sub", name))
	}
	assert.Equal(t, before, fixture.Snapshot(t, outside))
	assert.Empty(t, fixture.Residue(t, root))
	assert.Empty(t, fixture.Residue(t, outside))
}

// CollisionError's text names the kind of collision and its cause.
func TestCollisionError(t *testing.T) {
	cause := &os.LinkError{Op: "link", Old: "o", New: "n", Err: unix.EEXIST}
	reg := &CollisionError{Regular: true, Err: cause}
	other := &CollisionError{Regular: false, Err: cause}
	assert.Equal(t, "target exists: "+cause.Error(), reg.Error())
	assert.Equal(t, "target exists and is not a regular file: "+cause.Error(), other.Error())
	assert.ErrorIs(t, reg, unix.EEXIST)
	assert.True(t, errors.Is(other, unix.EEXIST))
}

func TestWrite_NameMustBeOneComponent(t *testing.T) {
	for _, name := range []string{"", ".", "..", "lnk/x", "a/", "/abs"} {
		t.Run(name, func(t *testing.T) {
			forEachParent(t, []string{"lnk/"}, func(t *testing.T, e env) {
				before := fixture.Snapshot(t, e.root)
				_, err := Write(context.Background(), Request{Parent: e.p, Name: name, Content: "x", noUnnamed: e.staged})
				require.ErrorIs(t, err, unix.EINVAL)
				assert.Equal(t, before, fixture.Snapshot(t, e.root), "nothing touched")
			})
		})
	}
}

// Issue 15: the unnamed temp file is the only inode a write makes; while it
// is staged the directory holds nothing new, and a replace leaves no
// temporary name behind (L-78).
func TestWrite_UnnamedPublicationMakesNoEntryUntilPublished(t *testing.T) {
	for _, pb := range publications {
		t.Run(pb.name, func(t *testing.T) {
			forEachKind(t, false, []string{"other: x"}, func(t *testing.T, e env) {
				var staged []string
				var dir, file string
				_, err := Write(context.Background(), Request{
					Parent: e.p, Name: "a.txt", Content: "x", Publication: pb.pub,
					AfterStage: func(sd, tf string) {
						dir, file = sd, tf
						var err error
						staged, err = e.p.Names()
						assert.NoError(t, err)
					},
				})
				require.NoError(t, err)
				assert.Empty(t, dir, "no staging directory")
				assert.Empty(t, file, "no temp name")
				assert.Equal(t, []string{"other"}, staged, "nothing in the directory before publication")
				assertFile(t, e.target(), "x", newPerm)
				noResidue(t, e)
			})
		})
	}
}

// TestWrite_VerifyUndoes checks the publication of a fence without Landlock:
// a replace is published by exchange, so a refused publication puts the
// replaced file (same inode, same content) back; a create is unlinked; a
// passing check publishes as usual. Nothing is left behind, unnamed or
// staged.
func TestWrite_VerifyUndoes(t *testing.T) {
	refused := errors.New("the directory left its root")
	cases := []struct {
		name    string
		specs   []string
		pub     Publication
		verify  error
		want    string // content at the target afterwards; "" for absent
		wantIno bool   // the target keeps its original inode
	}{
		{"a refused replace puts the replaced file back", []string{"a.txt: old"}, Replace, refused, "old", true},
		{"a refused replace onto nothing leaves nothing", nil, Replace, refused, "", false},
		{"a refused create leaves nothing", nil, CreateOnly, refused, "", false},
		{"a passing replace publishes", []string{"a.txt: old"}, Replace, nil, "new", false},
		{"a passing replace onto nothing publishes", nil, Replace, nil, "new", false},
		{"a passing create publishes", nil, CreateOnly, nil, "new", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachParent(t, tc.specs, func(t *testing.T, e env) {
				var before unix.Stat_t
				hadOld := unix.Lstat(e.target(), &before) == nil
				calls := 0
				_, err := Write(context.Background(), Request{
					Parent: e.p, Name: "a.txt", Content: "new", noUnnamed: e.staged, Publication: tc.pub,
					Verify: func() error {
						calls++
						b, rerr := os.ReadFile(e.target())
						require.NoError(t, rerr)
						assert.Equal(t, "new", string(b), "Verify runs after publication")
						return tc.verify
					},
				})
				assert.Equal(t, 1, calls)
				if tc.verify != nil {
					require.ErrorIs(t, err, refused)
				} else {
					require.NoError(t, err)
				}
				if tc.want == "" {
					assertAbsent(t, e.target())
				} else {
					b, rerr := os.ReadFile(e.target())
					require.NoError(t, rerr)
					assert.Equal(t, tc.want, string(b))
				}
				if tc.wantIno {
					var after unix.Stat_t
					require.NoError(t, unix.Lstat(e.target(), &after))
					assert.True(t, hadOld)
					assert.Equal(t, before.Ino, after.Ino, "the replaced file itself is back")
				}
				noResidue(t, e)
			})
		})
	}
}

func TestWrite_VerifyNeverReplacesADirectory(t *testing.T) {
	forEachParent(t, []string{"a.txt/inner: kept"}, func(t *testing.T, e env) {
		before := fixture.Snapshot(t, e.dir)
		_, err := Write(context.Background(), Request{
			Parent: e.p, Name: "a.txt", Content: "x", noUnnamed: e.staged, Publication: Replace,
			Verify: func() error { return nil },
		})
		require.ErrorIs(t, err, unix.EISDIR)
		assert.Equal(t, before, fixture.Snapshot(t, e.dir), "directory preserved")
		noResidue(t, e)
	})
}
