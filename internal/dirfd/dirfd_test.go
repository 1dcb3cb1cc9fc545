//go:build linux

package dirfd_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/fixture"
)

// hangLimit bounds every call that must not block (a symlink loop, a FIFO).
const hangLimit = 5 * time.Second

// outcome is what one call on one handle is expected to do.
type outcome int

const (
	wantOK           outcome = iota // succeeds, with the OS's own resolution
	wantEscape                      // refused: EXDEV, dirfd.IsEscape
	wantEscapeOrLoop                // refused: EXDEV or ELOOP (a /proc magic link)
	wantLoop                        // ELOOP (a symlink loop), promptly
	wantTooLong                     // ENAMETOOLONG (a component over 255 bytes)
)

// escapeCase is one row of the escape table. Placeholders in tree, mk and rd:
// {root} the root, {out} the outside directory, {relout} the outside
// directory spelled relative to the root.
type escapeCase struct {
	name string
	tree []string // fixture entries beneath the root
	mk   string   // path given to OpenParent(create=true)
	rd   string   // path given to OpenRead ("" = not read)
	// confined and host are the outcomes on dirfd.OpenBeneath(root) and on
	// dirfd.Host() (where the path is prefixed with the root's path).
	confined, host outcome
	// hostAdds lists the entries (relative to the outside directory) the
	// host handle creates there: the host follows links out.
	hostAdds []string
	noHost   bool // the path is absolute: it has no host spelling beneath root
}

var longName = strings.Repeat("n", 256)

// escapeTable is the fence's escape table (docs/design.md "The fence"; spec S-08,
// S-09, S-10), run through OpenParent(create) and OpenRead on both handles.
// The outside directory holds "secret: outside text" and "sub/"; the root's
// parent holds "sibling: sibling text".
var escapeTable = []escapeCase{
	{
		name: "dotdot traversal ../x is an escape (S-08)",
		mk:   "../x", rd: "../sibling",
		confined: wantEscape, host: wantOK,
	},
	{
		name: "a/../../x climbs out through an existing dir (S-08)",
		tree: []string{"a/"},
		mk:   "a/../../x", rd: "a/../../sibling",
		confined: wantEscape, host: wantOK,
	},
	{
		name: "absolute dir symlink pointing out is denied (S-09)",
		tree: []string{"lnk => {out}"},
		mk:   "lnk/newdir", rd: "lnk/secret",
		confined: wantEscape, host: wantOK, hostAdds: []string{"newdir"},
	},
	{
		name: "relative dir symlink pointing out is denied (S-09)",
		tree: []string{"lnk => {relout}"},
		mk:   "lnk/newdir", rd: "lnk/secret",
		confined: wantEscape, host: wantOK, hostAdds: []string{"newdir"},
	},
	{
		name:     "missing tail under absolute out-link creates nothing outside (S-10)",
		tree:     []string{"lnk => {out}"},
		mk:       "lnk/newdir/deep",
		confined: wantEscape, host: wantOK, hostAdds: []string{"newdir", "newdir/deep"},
	},
	{
		name:     "missing tail under relative out-link creates nothing outside (S-10)",
		tree:     []string{"d/lnk => ../{relout}"},
		mk:       "d/lnk/newdir/deep",
		confined: wantEscape, host: wantOK, hostAdds: []string{"newdir", "newdir/deep"},
	},
	{
		name: "chained symlink in -> in2 -> absolute outside is denied",
		tree: []string{"in => in2", "in2 => {out}"},
		mk:   "in/newdir/deep", rd: "in/secret",
		confined: wantEscape, host: wantOK, hostAdds: []string{"newdir", "newdir/deep"},
	},
	{
		name: "chained symlink in -> in2 -> relative outside is denied",
		tree: []string{"in => d/in2", "d/in2 => ../{relout}/sub"},
		mk:   "in/newdir", rd: "in/../secret",
		confined: wantEscape, host: wantOK, hostAdds: []string{"sub/newdir"},
	},
	{
		// RESOLVE_BENEATH refuses every absolute symlink, even one whose
		// destination lies beneath the root: callers must not rely on
		// absolute links inside a workspace.
		name: "absolute symlink to a dir inside the root is refused (RESOLVE_BENEATH)",
		tree: []string{"d/f: in d", "abs => {root}/d"},
		mk:   "abs/newdir", rd: "abs/f",
		confined: wantEscape, host: wantOK,
	},
	{
		// A relative link whose ".." climbs above the root is refused even
		// when it comes back in.
		name: "relative symlink leaving and re-entering the root is refused",
		tree: []string{"d/f: in d", "lnk => ../root/d"},
		mk:   "lnk/newdir", rd: "lnk/f",
		confined: wantEscape, host: wantOK,
	},
	{
		name: "in-root symlink to /proc/self/root reaching outside is refused",
		tree: []string{"proc => /proc/self/root"},
		mk:   "proc{out}/newdir", rd: "proc{out}/secret",
		confined: wantEscapeOrLoop, host: wantOK, hostAdds: []string{"newdir"},
	},
	{
		name: "absolute path given to a confined handle is an escape",
		mk:   "{out}/newdir", rd: "{out}/secret",
		confined: wantEscape, noHost: true,
	},
	{
		name: "self symlink loop is ELOOP, not a hang",
		tree: []string{"loop => loop"},
		mk:   "loop/newdir", rd: "loop",
		confined: wantLoop, host: wantLoop,
	},
	{
		name: "two-link symlink loop is ELOOP, not a hang",
		tree: []string{"l1 => l2", "l2 => l1"},
		mk:   "l1/newdir/deep", rd: "l1/f",
		confined: wantLoop, host: wantLoop,
	},
	{
		name: "component over 255 bytes is ENAMETOOLONG",
		mk:   longName, rd: longName,
		confined: wantTooLong, host: wantTooLong,
	},
	{
		name: "component over 255 bytes under an existing dir is ENAMETOOLONG",
		tree: []string{"d/"},
		mk:   "d/" + longName + "/x", rd: "d/" + longName,
		confined: wantTooLong, host: wantTooLong,
	},
	{
		name: "dotdot that stays inside d/../e is allowed",
		tree: []string{"d/", "e/f: in e"},
		mk:   "d/../e/new", rd: "d/../e/f",
		confined: wantOK, host: wantOK,
	},
	{
		name: "relative symlink staying inside is followed",
		tree: []string{"real/f: in real", "lnk => real"},
		mk:   "lnk/new/deep", rd: "lnk/f",
		confined: wantOK, host: wantOK,
	},
	{
		name:     "missing parents inside are created",
		mk:       "x/y/z",
		confined: wantOK, host: wantOK,
	},
	{
		name: "the root itself opens",
		tree: []string{"f: top"},
		mk:   "", rd: "f",
		confined: wantOK, host: wantOK,
	},
}

// tree is one built escape-table layout.
type tree struct {
	base, root, outside string
}

func buildTree(t *testing.T, c escapeCase) tree {
	t.Helper()
	base := t.TempDir()
	tr := tree{base: base, root: filepath.Join(base, "root"), outside: fixture.OutsideDir(t)}
	fixture.Build(t, base, "root/", "sibling: sibling text")
	fixture.Build(t, tr.outside, "secret: outside text", "sub/")
	fixture.Build(t, tr.root, tr.expandAll(t, c.tree)...)
	return tr
}

func (tr tree) expand(t *testing.T, s string) string {
	t.Helper()
	relout, err := filepath.Rel(tr.root, tr.outside)
	require.NoError(t, err)
	return strings.NewReplacer("{root}", tr.root, "{out}", tr.outside, "{relout}", relout).Replace(s)
}

func (tr tree) expandAll(t *testing.T, specs []string) []string {
	t.Helper()
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = tr.expand(t, s)
	}
	return out
}

// osPath is how the OS itself spells rel beneath the root: no lexical
// cleaning, so the kernel resolves "..", links and loops.
func (tr tree) osPath(rel string) string {
	if rel == "" {
		return tr.root
	}
	return tr.root + "/" + rel
}

// within runs f and fails the test when it does not return in time.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(hangLimit):
		t.Fatalf("call did not return within %v", hangLimit)
	}
}

func checkOutcome(t *testing.T, want outcome, err error) {
	t.Helper()
	switch want {
	case wantOK:
		require.NoError(t, err)
		return
	case wantEscape:
		require.Error(t, err)
		assert.True(t, dirfd.IsEscape(err), "want an escape (EXDEV), got %v", err)
	case wantEscapeOrLoop:
		require.Error(t, err)
		assert.True(t, errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ELOOP), "want EXDEV or ELOOP, got %v", err)
	case wantLoop:
		require.ErrorIs(t, err, unix.ELOOP)
		assert.False(t, dirfd.IsEscape(err))
	case wantTooLong:
		require.ErrorIs(t, err, unix.ENAMETOOLONG)
		assert.False(t, dirfd.IsEscape(err))
	}
	var pe *os.PathError
	assert.ErrorAs(t, err, &pe, "errors are *os.PathError")
}

// sameFile reports whether fd and the OS's resolution of p are one inode.
func assertSameFile(t *testing.T, fd int, p string) {
	t.Helper()
	var got, want unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &got))
	require.NoError(t, unix.Stat(p, &want), "the OS resolves %s", p)
	assert.Equal(t, want.Dev, got.Dev, "dev of %s", p)
	assert.Equal(t, want.Ino, got.Ino, "ino of %s", p)
}

// added returns the keys of after that are not in before.
func added(before, after map[string]string) []string {
	var keys []string
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// runEscapeCase runs one case on one handle. rel maps a table path to the
// handle's spelling of it.
func runEscapeCase(t *testing.T, tr tree, c escapeCase, h *dirfd.Dir, want outcome, wantAdds []string, rel func(string) string) {
	t.Helper()
	mk, rd := tr.expand(t, c.mk), tr.expand(t, c.rd)
	outBefore := fixture.Snapshot(t, tr.outside)
	baseBefore := fixture.Snapshot(t, tr.base)

	t.Run("OpenParent create", func(t *testing.T) {
		var (
			p       *dirfd.Parent
			created int
			err     error
		)
		within(t, func() { p, created, err = h.OpenParent(rel(mk), true) })
		checkOutcome(t, want, err)
		if want == wantOK {
			require.NotNil(t, p)
			defer func() { assert.NoError(t, p.Close()) }()
			assertSameFile(t, p.FD(), tr.osPath(mk))
			st, err := os.Stat(tr.osPath(mk))
			require.NoError(t, err)
			assert.True(t, st.IsDir())
			assert.GreaterOrEqual(t, created, 0)
			assert.ElementsMatch(t, wantAdds, added(outBefore, fixture.Snapshot(t, tr.outside)),
				"entries created in the outside dir")
			return
		}
		assert.Nil(t, p)
		assert.Zero(t, created, "nothing created on a refused path")
		_, statErr := os.Stat(tr.osPath(mk))
		assert.Error(t, statErr, "nothing exists where the OS would resolve %s", mk)
		assert.Equal(t, baseBefore, fixture.Snapshot(t, tr.base), "root and its parent unchanged")
		assert.Equal(t, outBefore, fixture.Snapshot(t, tr.outside), "outside unchanged")
	})

	if rd != "" {
		t.Run("OpenRead", func(t *testing.T) {
			var (
				f   *dirfd.File
				st  unix.Stat_t
				err error
			)
			within(t, func() { f, st, err = h.OpenRead(rel(rd)) })
			checkOutcome(t, want, err)
			if want != wantOK {
				assert.Nil(t, f)
				return
			}
			require.NotNil(t, f)
			defer func() { assert.NoError(t, f.Close()) }()
			assert.True(t, dirfd.IsRegular(&st))
			assertSameFile(t, f.Fd(), tr.osPath(rd))
			got, err := io.ReadAll(f)
			require.NoError(t, err)
			wantText, err := os.ReadFile(tr.osPath(rd))
			require.NoError(t, err)
			assert.Equal(t, string(wantText), string(got))
		})
	}

	assert.Empty(t, fixture.Residue(t, tr.base), "no staging residue")
	assert.Empty(t, fixture.Residue(t, tr.outside), "no staging residue outside")
}

func TestEscapeTable_Confined(t *testing.T) {
	for _, c := range escapeTable {
		t.Run(c.name, func(t *testing.T) {
			tr := buildTree(t, c)
			d, err := dirfd.OpenBeneath(tr.root)
			require.NoError(t, err)
			defer func() { assert.NoError(t, d.Close()) }()
			require.True(t, d.Confined())

			outBefore := fixture.Snapshot(t, tr.outside)
			runEscapeCase(t, tr, c, d, c.confined, nil, func(s string) string { return s })
			assert.Equal(t, outBefore, fixture.Snapshot(t, tr.outside), "a confined handle never changes the outside dir")
		})
	}
}

func TestEscapeTable_HostFollowsLikeTheOS(t *testing.T) {
	h := dirfd.Host()
	require.False(t, h.Confined())
	for _, c := range escapeTable {
		if c.noHost {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			tr := buildTree(t, c)
			rootRel, inside := h.Rel(tr.root)
			require.True(t, inside)
			runEscapeCase(t, tr, c, h, c.host, c.hostAdds, func(s string) string {
				if s == "" {
					return rootRel
				}
				return rootRel + "/" + s
			})
		})
	}
}

// A /proc magic link is refused by RESOLVE_NO_MAGICLINKS even when the
// handle is "/" and the destination is therefore beneath it.
func TestOpenBeneath_MagicLinkRefusedEvenBeneathRoot(t *testing.T) {
	outside := fixture.OutsideDir(t)
	fixture.Build(t, outside, "secret: outside text")
	before := fixture.Snapshot(t, outside)

	d, err := dirfd.OpenBeneath("/")
	require.NoError(t, err)
	defer func() { assert.NoError(t, d.Close()) }()

	rel := "proc/self/root" + outside
	_, _, err = d.OpenParent(rel+"/newdir", true)
	require.ErrorIs(t, err, unix.ELOOP)
	_, _, err = d.OpenRead(rel + "/secret")
	require.ErrorIs(t, err, unix.ELOOP)

	// The plain spelling of the same directory is fine beneath "/".
	f, st, err := d.OpenRead(strings.TrimPrefix(outside, "/") + "/secret")
	require.NoError(t, err)
	assert.True(t, dirfd.IsRegular(&st))
	assert.NoError(t, f.Close())

	assert.Equal(t, before, fixture.Snapshot(t, outside))
}

func TestOpenParent_CreatesMissingParents(t *testing.T) {
	old := unix.Umask(0o022)
	defer unix.Umask(old)

	root := t.TempDir()
	fixture.Build(t, root, "a/")
	d, err := dirfd.OpenBeneath(root)
	require.NoError(t, err)
	defer func() { assert.NoError(t, d.Close()) }()

	t.Run("create=false on a missing dir is ENOENT and creates nothing", func(t *testing.T) {
		before := fixture.Snapshot(t, root)
		p, created, err := d.OpenParent("a/b/c", false)
		require.ErrorIs(t, err, unix.ENOENT)
		assert.Nil(t, p)
		assert.Zero(t, created)
		assert.Equal(t, before, fixture.Snapshot(t, root))
	})
	t.Run("create=true makes each missing component (L-81)", func(t *testing.T) {
		p, created, err := d.OpenParent("a/b/c", true)
		require.NoError(t, err)
		defer func() { assert.NoError(t, p.Close()) }()
		assert.Equal(t, 2, created)
		assert.Equal(t, filepath.Join(root, "a/b/c"), p.Path())
		assertSameFile(t, p.FD(), filepath.Join(root, "a/b/c"))
		for _, dir := range []string{"a/b", "a/b/c"} {
			st, err := os.Lstat(filepath.Join(root, dir))
			require.NoError(t, err)
			assert.True(t, st.IsDir())
			assert.Equal(t, os.FileMode(0o755), st.Mode().Perm(), "mkdir -p mode under umask 022")
		}
	})
	t.Run("create=true on existing dirs creates nothing", func(t *testing.T) {
		p, created, err := d.OpenParent("a/b/c", true)
		require.NoError(t, err)
		assert.Zero(t, created)
		assert.NoError(t, p.Close())
	})
	t.Run("a regular file in the way is ENOTDIR", func(t *testing.T) {
		fixture.Build(t, root, "blocker: x")
		before := fixture.Snapshot(t, root)
		_, _, err := d.OpenParent("blocker/child", true)
		require.ErrorIs(t, err, unix.ENOTDIR)
		assert.Equal(t, before, fixture.Snapshot(t, root))
	})
	assert.Empty(t, fixture.Residue(t, root))
}

func TestOpenBeneath_Errors(t *testing.T) {
	root := t.TempDir()
	fixture.Build(t, root, "f: x")
	for _, c := range []struct {
		name string
		dir  string
		want error
	}{
		{"missing dir is ENOENT", filepath.Join(root, "missing"), unix.ENOENT},
		{"regular file is ENOTDIR", filepath.Join(root, "f"), unix.ENOTDIR},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := dirfd.OpenBeneath(c.dir)
			require.ErrorIs(t, err, c.want)
			assert.Nil(t, d)
			var pe *os.PathError
			assert.ErrorAs(t, err, &pe)
		})
	}
}

func TestOpenRead_FIFOWithoutWriterDoesNotBlock(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, unix.Mkfifo(filepath.Join(root, "fifo"), 0o600))
	confined, err := dirfd.OpenBeneath(root)
	require.NoError(t, err)
	defer func() { assert.NoError(t, confined.Close()) }()
	hostRel, _ := dirfd.Host().Rel(root)

	for _, c := range []struct {
		name string
		h    *dirfd.Dir
		rel  string
	}{
		{"confined", confined, "fifo"},
		{"host", dirfd.Host(), hostRel + "/fifo"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var (
				f   *dirfd.File
				st  unix.Stat_t
				err error
			)
			start := time.Now()
			within(t, func() { f, st, err = c.h.OpenRead(c.rel) })
			require.NoError(t, err)
			defer func() { assert.NoError(t, f.Close()) }()
			assert.Less(t, time.Since(start), time.Second)
			assert.False(t, dirfd.IsRegular(&st), "a FIFO is not regular")
			assert.Equal(t, uint32(unix.S_IFIFO), st.Mode&unix.S_IFMT)
		})
	}
	assert.Empty(t, fixture.Residue(t, root))
}

func TestOpenRead_DirectoryAndSymlinkKinds(t *testing.T) {
	root := t.TempDir()
	fixture.Build(t, root, "d/", "f: x", "lnk => f")
	d, err := dirfd.OpenBeneath(root)
	require.NoError(t, err)
	defer func() { assert.NoError(t, d.Close()) }()

	f, st, err := d.OpenRead("d")
	require.NoError(t, err)
	assert.True(t, dirfd.IsDir(&st))
	assert.False(t, dirfd.IsRegular(&st))
	assert.NoError(t, f.Close())

	f, st, err = d.OpenRead("lnk")
	require.NoError(t, err, "a final in-root symlink is followed")
	assert.True(t, dirfd.IsRegular(&st))
	assert.NoError(t, f.Close())

	_, _, err = d.OpenRead("missing")
	require.ErrorIs(t, err, unix.ENOENT)
}

// TestOpenReadFDNoSymlinks: a file or directory is opened, its fstat
// returned; a symlink anywhere in the path, final or not, even one that
// stays beneath the root, is ELOOP and opens nothing; ".." out of the root
// is an escape.
func TestOpenReadFDNoSymlinks(t *testing.T) {
	root := t.TempDir()
	fixture.Build(t, root, "d/f: x", "lnk => d/f", "dl => d")
	d, err := dirfd.OpenBeneath(root)
	require.NoError(t, err)
	defer func() { assert.NoError(t, d.Close()) }()

	for rel, dir := range map[string]bool{"d/f": false, "d": true, "": true} {
		fd, st, err := d.OpenReadFDNoSymlinks(rel)
		require.NoError(t, err, rel)
		assert.Equal(t, dir, dirfd.IsDir(&st), rel)
		assert.NoError(t, unix.Close(fd))
	}
	for _, rel := range []string{"lnk", "dl/f", "dl"} {
		fd, _, err := d.OpenReadFDNoSymlinks(rel)
		require.ErrorIs(t, err, unix.ELOOP, rel)
		assert.Equal(t, -1, fd)
	}
	_, _, err = d.OpenReadFDNoSymlinks("../x")
	assert.True(t, dirfd.IsEscape(err), "%v", err)
}

func TestRel(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ws")
	fixture.Build(t, filepath.Dir(root), "ws/")
	d, err := dirfd.OpenBeneath(root)
	require.NoError(t, err)
	defer func() { assert.NoError(t, d.Close()) }()
	assert.Equal(t, root, d.Path())

	for _, c := range []struct {
		name   string
		h      *dirfd.Dir
		abs    string
		want   string
		inside bool
	}{
		{"handle path itself is inside and empty (S-21)", d, root, "", true},
		{"child is inside (S-21)", d, root + "/a/b.txt", "a/b.txt", true},
		{"sibling with the root as a string prefix is outside", d, root + "-evil", "", false},
		{"sibling-prefix child is outside", d, root + "-evil/x", "", false},
		{"parent is outside", d, filepath.Dir(root), "", false},
		{"unrelated path is outside", d, "/etc/passwd", "", false},
		{"filesystem root is outside", d, "/", "", false},
		{"host: / is inside and empty (S-15)", dirfd.Host(), "/", "", true},
		{"host: any absolute path is inside", dirfd.Host(), "/a/b", "a/b", true},
		{"host: the root path", dirfd.Host(), root, strings.TrimPrefix(root, "/"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, inside := c.h.Rel(c.abs)
			assert.Equal(t, c.inside, inside)
			assert.Equal(t, c.want, got)
		})
	}
	assert.Equal(t, "/", dirfd.Host().Path())
}

func TestClose_IsIdempotent(t *testing.T) {
	root := t.TempDir()
	d, err := dirfd.OpenBeneath(root)
	require.NoError(t, err)
	p, _, err := d.OpenParent("", false)
	require.NoError(t, err)
	assert.NoError(t, d.Close())
	assert.NoError(t, d.Close())
	assert.NoError(t, p.Close())
	assert.NoError(t, p.Close())
	assert.NoError(t, dirfd.Host().Close())
}

// Parent operations address single names with the parent's confinement:
// beneath a confined parent, a name cannot lead out (not even to the root
// above the parent); Stat reads metadata and is not confined.
func TestParent_SingleNameOps(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := fixture.OutsideDir(t)
	fixture.Build(t, outside, "secret: outside text", "sub/")
	fixture.Build(t, base, "root/d/f: in d", "root/d/out => "+outside, "root/d/in => f", "root/top: top")
	outBefore := fixture.Snapshot(t, outside)

	d, err := dirfd.OpenBeneath(root)
	require.NoError(t, err)
	defer func() { assert.NoError(t, d.Close()) }()
	p, _, err := d.OpenParent("d", false)
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()

	assert.Equal(t, filepath.Join(root, "d"), p.Path())
	assert.Equal(t, filepath.Join(root, "d", "f"), p.Join("f"))
	assert.NoError(t, p.Sync())

	names, err := p.Names()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"f", "out", "in"}, names)

	t.Run("OpenDir through an out-link is an escape", func(t *testing.T) {
		_, err := p.OpenDir("out")
		assert.True(t, dirfd.IsEscape(err), "got %v", err)
	})
	t.Run("OpenDir .. leaves the parent and is an escape", func(t *testing.T) {
		_, err := p.OpenDir("..")
		assert.True(t, dirfd.IsEscape(err), "got %v", err)
	})
	t.Run("OpenRead through an out-link is an escape", func(t *testing.T) {
		_, _, err := p.OpenRead("out")
		assert.True(t, dirfd.IsEscape(err), "got %v", err)
	})
	t.Run("OpenRead of an in-dir link is followed", func(t *testing.T) {
		f, st, err := p.OpenRead("in")
		require.NoError(t, err)
		assert.True(t, dirfd.IsRegular(&st))
		b, err := io.ReadAll(f)
		require.NoError(t, err)
		assert.Equal(t, "in d", string(b))
		assert.NoError(t, f.Close())
	})
	t.Run("Stat nofollow sees the link, follow sees the outside dir", func(t *testing.T) {
		st, err := p.Stat("out", false)
		require.NoError(t, err)
		assert.True(t, dirfd.IsSymlink(&st))
		st, err = p.Stat("out", true)
		require.NoError(t, err)
		assert.True(t, dirfd.IsDir(&st))
		_, err = p.Stat("missing", false)
		require.ErrorIs(t, err, unix.ENOENT)
	})
	assert.Equal(t, outBefore, fixture.Snapshot(t, outside))
	assert.Empty(t, fixture.Residue(t, base))
}

// flipRace runs flip in a loop while the main goroutine calls
// OpenParent("d/sub", true) and creates "f" in the opened parent, n times.
// It returns how many attempts succeeded and how many were refused as
// escapes; any other error fails the test.
func flipRace(t *testing.T, d *dirfd.Dir, n int, flip func() error) (opened, refused int) {
	t.Helper()
	var (
		stop    atomic.Bool
		flipErr error
		flips   int
		wg      sync.WaitGroup
	)
	wg.Go(func() {
		for !stop.Load() {
			if err := flip(); err != nil {
				flipErr = err
				return
			}
			flips++
		}
	})
	for range n {
		p, _, err := d.OpenParent("d/sub", true)
		if err != nil {
			if !dirfd.IsEscape(err) {
				stop.Store(true)
				wg.Wait()
				require.NoError(t, err, "only escapes may be refused")
			}
			refused++
			continue
		}
		fd, err := unix.Openat(p.FD(), "f", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
		if err == nil {
			_ = unix.Close(fd)
			opened++
		}
		_ = p.Close()
		if err != nil {
			stop.Store(true)
			wg.Wait()
			require.NoError(t, err)
		}
	}
	stop.Store(true)
	wg.Wait()
	require.NoError(t, flipErr)
	t.Logf("%d opened, %d refused, %d flips", opened, refused, flips)
	return opened, refused
}

// The fence is kernel-tight: with root/d swapped between a real directory
// and a link to the outside dir while OpenParent runs, no creation ever
// lands outside (docs/design.md "The fence": an ancestor symlink swapped between
// check and syscall).
func TestOpenParent_RaceWithAncestorSwap(t *testing.T) {
	const n = 2000

	// os.Rename cannot put a symlink over a directory (EISDIR), and moving
	// the directory away first leaves a window where OpenParent itself
	// recreates d; RENAME_EXCHANGE swaps the prepared entries atomically so
	// d always exists and is either the real dir or the link.
	t.Run("real dir <-> symlink out by RENAME_EXCHANGE", func(t *testing.T) {
		root := t.TempDir()
		outside := fixture.OutsideDir(t)
		fixture.Build(t, root, "d/sub/", "d.swap => "+outside)
		before := fixture.Snapshot(t, outside)
		d, err := dirfd.OpenBeneath(root)
		require.NoError(t, err)
		defer func() { assert.NoError(t, d.Close()) }()

		dPath, swap := filepath.Join(root, "d"), filepath.Join(root, "d.swap")
		start := time.Now()
		opened, refused := flipRace(t, d, n, func() error {
			return unix.Renameat2(unix.AT_FDCWD, dPath, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE)
		})
		assert.Equal(t, n, opened+refused)
		assert.Less(t, time.Since(start), 5*time.Second)
		assert.Equal(t, before, fixture.Snapshot(t, outside), "nothing new exists outside")
		if opened > 0 {
			assert.FileExists(t, filepath.Join(realDir(t, root), "sub", "f"), "creations land in the real dir")
		}
		assert.Empty(t, fixture.Residue(t, root))
	})

	// Pure os.Rename of prepared symlinks: d is atomically replaced by a
	// link to the real dir inside or a link to the outside dir.
	t.Run("link in <-> link out by os.Rename of prepared links", func(t *testing.T) {
		root := t.TempDir()
		outside := fixture.OutsideDir(t)
		fixture.Build(t, root, "real/sub/", "d => real")
		before := fixture.Snapshot(t, outside)
		d, err := dirfd.OpenBeneath(root)
		require.NoError(t, err)
		defer func() { assert.NoError(t, d.Close()) }()

		dPath, next := filepath.Join(root, "d"), filepath.Join(root, "d.next")
		out := true
		start := time.Now()
		opened, refused := flipRace(t, d, n, func() error {
			dest := "real"
			if out {
				dest = outside
			}
			out = !out
			if err := os.Symlink(dest, next); err != nil {
				return err
			}
			return os.Rename(next, dPath)
		})
		assert.Equal(t, n, opened+refused)
		assert.Less(t, time.Since(start), 5*time.Second)
		assert.Equal(t, before, fixture.Snapshot(t, outside), "nothing new exists outside")
		if opened > 0 {
			assert.FileExists(t, filepath.Join(root, "real", "sub", "f"))
		}
		assert.Empty(t, fixture.Residue(t, root))
	})
}

// realDir returns whichever of root/d and root/d.swap is the real directory.
func realDir(t *testing.T, root string) string {
	t.Helper()
	for _, name := range []string{"d", "d.swap"} {
		st, err := os.Lstat(filepath.Join(root, name))
		require.NoError(t, err)
		if st.IsDir() {
			return filepath.Join(root, name)
		}
	}
	t.Fatal("no real directory left")
	return ""
}

// TestOpenParent_DotDotFollowsTheKernel: creating "lnk/../x" goes up from
// where lnk leads, as the kernel resolves it, never by lexical collapse.
func TestOpenParent_DotDotFollowsTheKernel(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, root, "real/deeper/", "lnk => real/deeper")
	d, err := dirfd.OpenBeneath(root)
	require.NoError(t, err)
	defer d.Close() //nolint:errcheck // test cleanup
	p, created, err := d.OpenParent("lnk/../x", true)
	require.NoError(t, err)
	defer p.Close() //nolint:errcheck // test cleanup
	assert.Equal(t, 1, created)
	assert.DirExists(t, filepath.Join(root, "real/x"))
	assert.NoDirExists(t, filepath.Join(root, "x"))
}

func TestOpenBeneath_RefusesASymlinkedRootPath(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, base, "real/", "alias => real")
	_, err = dirfd.OpenBeneath(filepath.Join(base, "alias"))
	require.ErrorIs(t, err, unix.ELOOP, "a root must be named by its canonical path")
	d, err := dirfd.OpenBeneath(filepath.Join(base, "real"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(base, "real"), d.Path())
	require.NoError(t, d.Close())
}

func TestHostRel_RequiresAnAbsolutePath(t *testing.T) {
	_, ok := dirfd.Host().Rel("pipe:[1234]")
	assert.False(t, ok)
}

// TestEachName: EachName reports the names Names does, across several
// getdents batches, without "." and "..", and stops at the callback's
// error.
func TestEachName(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	d, err := dirfd.OpenBeneath(root)
	require.NoError(t, err)
	defer func() { assert.NoError(t, d.Close()) }()
	// Long names so 5,000 entries span many 64 KiB batches.
	want := make([]string, 0, 5000)
	for i := range 5000 {
		name := fmt.Sprintf("%04d-%s", i, strings.Repeat("n", 100))
		want = append(want, name)
		require.NoError(t, os.WriteFile(filepath.Join(root, name), nil, 0o644))
	}
	p, _, err := d.OpenParent("", false)
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()

	var got []string
	require.NoError(t, p.EachName(func(name []byte) error {
		got = append(got, string(name))
		return nil
	}))
	assert.ElementsMatch(t, want, got)
	names, err := p.Names()
	require.NoError(t, err)
	assert.ElementsMatch(t, names, got)

	stop := errors.New("stop")
	calls := 0
	err = p.EachName(func([]byte) error {
		calls++
		if calls == 10 {
			return stop
		}
		return nil
	})
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 10, calls)
}
