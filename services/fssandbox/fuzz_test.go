//go:build linux

package fssandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// FuzzFence decodes each input into a small tree under a fresh workspace, a
// path and a mutation (see fenceInput), runs the mutation under
// workspace-write with the workspace as the only writable root, and checks
// the fence: the call returns within fenceCallTimeout without panicking,
// nothing outside the workspace changes, no staging residue is left anywhere,
// and a mutation that succeeds changed a regular file whose canonical path
// lies inside the workspace. Every write fsyncs, so on a disk-backed temp
// directory the engine manages about a hundred execs/s; TMPDIR=/dev/shm (a
// tmpfs) gives about ten times that.
func FuzzFence(f *testing.F) {
	for _, s := range fenceSeeds {
		f.Add(s.encode())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fenceMaxInput {
			t.Skip("input too large")
		}
		e := newFenceEnv(t)
		in := decodeFenceInput(data)
		path := in.path(e)
		if !e.checked(path) {
			// Only snapshotted directories may be at stake: "/proc/self/cwd/../../.."
			// is "/", and a broken fence must not write there as root.
			t.Skip("the path climbs out of the checked tree lexically")
		}
		in.build(t, e)

		policy, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: e.ws, TempRoots: []string{}})
		require.NoError(t, err)
		sb, err := fssandbox.New(policy, fslocal.Config{Cwd: e.ws}, fssandbox.Config{}, nil)
		require.NoError(t, err)
		defer func() { require.NoError(t, sb.Close()) }()

		restBefore, wsBefore := e.snapshots(t)
		tg, err := fenceCall(t, func() (fs.Target, error) {
			tg, err := sb.Resolve(context.Background(), path, fs.ResolveOptions{})
			if err != nil {
				return tg, err
			}
			return tg, mutations[in.op].run(context.Background(), sb, tg)
		})
		restAfter, wsAfter := e.snapshots(t)

		require.Equal(t, restBefore, restAfter, "something outside the workspace changed (%s %q, err %v)", mutations[in.op].name, path, err)
		require.Empty(t, fixture.Residue(t, e.top), "staging residue (%s %q, err %v)", mutations[in.op].name, path, err)
		if err != nil {
			require.NotEmpty(t, fs.CodeOf(err), "an error without an FS_* code: %v", err)
			return
		}
		canon, err := filepath.EvalSymlinks(tg.DisplayPath)
		require.NoError(t, err, "%s %q succeeded but its display path %q does not resolve", mutations[in.op].name, path, tg.DisplayPath)
		require.True(t, strings.HasPrefix(canon, e.ws+"/"), "%s %q succeeded and landed at %q, outside the workspace", mutations[in.op].name, path, canon)
		info, err := os.Lstat(canon)
		require.NoError(t, err)
		require.True(t, info.Mode().IsRegular(), "%s %q landed on a %v", mutations[in.op].name, path, info.Mode())
		require.Equal(t, "pwned", readFile(t, canon), "%s %q", mutations[in.op].name, path)
		rel := strings.TrimPrefix(canon, e.ws+"/")
		require.NotEqual(t, wsBefore[rel], wsAfter[rel], "%s %q succeeded but %q did not change", mutations[in.op].name, path, rel)
	})
}

const (
	// fenceMaxInput caps the fuzz input (see maxFuzzInput in textfile):
	// 12 entries of at most 3 bytes and a path of at most 10 bytes fit.
	fenceMaxInput = 64
	// fenceMaxEntries caps the tree, to keep each iteration cheap.
	fenceMaxEntries = 12
	// fenceMaxComponents caps the components of the mutated path.
	fenceMaxComponents = 7
	// fenceNesting is how deep the base directory lies below the top of the
	// test's temp directory: deeper than any path or link chain of an input
	// can climb, so every directory an escape could reach is snapshotted.
	fenceNesting = 12
	// fenceCallTimeout bounds each call: no input may hang the fence.
	fenceCallTimeout = 2 * time.Second
)

// fenceEnv is one iteration's layout: top (the test's temp directory, every
// byte of which but ws is checked) / l0/.../l11 = base / {ws, outside,
// ws-evil}. outside holds secret.txt and sub/. The process works in outside,
// so /proc/self/cwd spells it; outFD is /proc/self/fd/N of a descriptor open
// on it.
type fenceEnv struct {
	top, base, ws, outside, outFD string
}

func newFenceEnv(t *testing.T) *fenceEnv {
	t.Helper()
	top, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	base := top
	for i := range fenceNesting {
		base = filepath.Join(base, "l"+strconv.Itoa(i))
	}
	e := &fenceEnv{top: top, base: base, ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	require.NoError(t, os.MkdirAll(e.ws, 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(base, "ws-evil"), 0o755))
	fixture.Build(t, e.outside, "secret.txt: secret", "sub/")
	dir, err := os.Open(e.outside)
	require.NoError(t, err)
	t.Cleanup(func() { _ = dir.Close() })
	e.outFD = "/proc/self/fd/" + strconv.Itoa(int(dir.Fd()))
	t.Chdir(e.outside)
	return e
}

// snapshots returns the snapshot of everything beneath top but the
// workspace, and the workspace's, relative to it.
func (e *fenceEnv) snapshots(t *testing.T) (rest, ws map[string]string) {
	t.Helper()
	rest = fixture.Snapshot(t, e.top)
	wsRel, err := filepath.Rel(e.top, e.ws)
	require.NoError(t, err)
	for k := range rest {
		if strings.HasPrefix(k, wsRel+"/") {
			delete(rest, k)
		}
	}
	return rest, fixture.Snapshot(t, e.ws)
}

// Entry kinds of the tree.
const (
	kindDir = iota
	kindFile
	kindSymlink
	kindHardlink // a hard link to outside/secret.txt
	kindCount
)

// fenceNames are the names of tree entries.
var fenceNames = [...]string{"a", "b", "c", "d"}

// Symlink destinations, relative to the link's directory unless absolute.
const (
	tgtUp          = iota // ..
	tgtUpUp               // ../..
	tgtUpOutside          // ../outside
	tgtOutside            // <outside>
	tgtOutsideSub         // <outside>/sub
	tgtOutsideTail        // <outside>/missing/tail: a directory link out with a missing tail
	tgtOutsideFile        // <outside>/secret.txt
	tgtOutsideNew         // <outside>/new.txt: dangling, out
	tgtWS                 // <ws>
	tgtWSA                // <ws>/a
	tgtProcRoot           // /proc/self/root<outside>
	tgtProcCwd            // /proc/self/cwd (the outside directory)
	tgtProcFD             // /proc/self/fd/N of the outside directory
	tgtProcRootWS         // /proc/self/root<ws>
	tgtDangling           // missing: dangling, inside
	tgtSelf               // the link's own name: a loop
	tgtSibling            // a: a sibling entry
	tgtBase               // <base>: the workspace's parent, absolute
	tgtEvil               // <base>/ws-evil: a sibling-prefix directory
	tgtUpUpUp             // ../../..
	tgtCount
)

func (e *fenceEnv) linkTarget(i int, name string) string {
	switch i {
	case tgtUp:
		return ".."
	case tgtUpUp:
		return "../.."
	case tgtUpOutside:
		return "../outside"
	case tgtOutside:
		return e.outside
	case tgtOutsideSub:
		return e.outside + "/sub"
	case tgtOutsideTail:
		return e.outside + "/missing/tail"
	case tgtOutsideFile:
		return e.outside + "/secret.txt"
	case tgtOutsideNew:
		return e.outside + "/new.txt"
	case tgtWS:
		return e.ws
	case tgtWSA:
		return e.ws + "/a"
	case tgtProcRoot:
		return "/proc/self/root" + e.outside
	case tgtProcCwd:
		return "/proc/self/cwd"
	case tgtProcFD:
		return e.outFD
	case tgtProcRootWS:
		return "/proc/self/root" + e.ws
	case tgtDangling:
		return "missing"
	case tgtSelf:
		return name
	case tgtSibling:
		return "a"
	case tgtBase:
		return e.base
	case tgtEvil:
		return e.base + "/ws-evil"
	default:
		return "../../.."
	}
}

// Prefixes of the mutated path.
const (
	preRelative   = iota // relative to the workspace (the backend's cwd)
	preWS                // <ws>/
	preBase              // <base>/
	preProcRootWS        // /proc/self/root<ws>/
	preProcCwd           // /proc/self/cwd/
	preOutside           // <outside>/
	preProcFD            // /proc/self/fd/N/ (the outside directory)
	preCount
)

func (e *fenceEnv) prefix(i int) string {
	switch i {
	case preRelative:
		return ""
	case preWS:
		return e.ws + "/"
	case preBase:
		return e.base + "/"
	case preProcRootWS:
		return "/proc/self/root" + e.ws + "/"
	case preProcCwd:
		return "/proc/self/cwd/"
	case preOutside:
		return e.outside + "/"
	default:
		return e.outFD + "/"
	}
}

// Components of the mutated path; the first len(fenceNames) are the entry
// names.
const (
	compNew     = len(fenceNames) + iota // new: a fresh name
	compDotDot                           // ..
	compDot                              // .
	compEmpty                            // "" (so "a//b")
	compSlashes                          // //
	compLong                             // a name over NAME_MAX
	compOutside                          // outside
	compWS                               // ws
	compSecret                           // secret.txt
	compCount
)

func component(i int) string {
	if i < len(fenceNames) {
		return fenceNames[i]
	}
	switch i {
	case compNew:
		return "new"
	case compDotDot:
		return ".."
	case compDot:
		return "."
	case compEmpty:
		return ""
	case compSlashes:
		return "//"
	case compLong:
		return strings.Repeat("n", 300)
	case compOutside:
		return "outside"
	case compWS:
		return "ws"
	default:
		return "secret.txt"
	}
}

// fenceEntry is one tree entry: kind, the index of its parent among the
// directories made so far (0: the workspace), its name, and a symlink's
// destination (a tgt* constant).
type fenceEntry struct {
	kind, parent, name, target int
}

// fenceInput is a decoded fuzz input.
type fenceInput struct {
	entries  []fenceEntry
	prefix   int
	comps    []int
	trailing bool // append "/"
	op       int
}

// decodeFenceInput reads data as: an entry count byte; per entry a byte
// (kind = b%kindCount, parent = b/kindCount), a name byte and, for a
// symlink, a destination byte; a prefix byte (prefix = b%preCount, bit 7: a
// trailing slash); a component count byte; one byte per component; an
// operation byte. Missing bytes read as zero, so every input decodes.
func decodeFenceInput(data []byte) fenceInput {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	var in fenceInput
	for range next() % (fenceMaxEntries + 1) {
		kb := next()
		en := fenceEntry{kind: kb % kindCount, parent: kb / kindCount, name: next() % len(fenceNames)}
		if en.kind == kindSymlink {
			en.target = next() % tgtCount
		}
		in.entries = append(in.entries, en)
	}
	pb := next()
	in.prefix, in.trailing = pb%preCount, pb&0x80 != 0
	for range next() % (fenceMaxComponents + 1) {
		in.comps = append(in.comps, next()%compCount)
	}
	in.op = next() % len(mutations)
	return in
}

// encode is the inverse of decodeFenceInput, for seeds.
func (in fenceInput) encode() []byte {
	b := []byte{byte(len(in.entries))}
	for _, en := range in.entries {
		b = append(b, byte(en.parent*kindCount+en.kind), byte(en.name))
		if en.kind == kindSymlink {
			b = append(b, byte(en.target))
		}
	}
	pb := byte(in.prefix)
	if in.trailing {
		pb |= 0x80
	}
	b = append(b, pb, byte(len(in.comps)))
	for _, c := range in.comps {
		b = append(b, byte(c))
	}
	return append(b, byte(in.op))
}

// build makes the tree beneath e.ws; an entry whose name is taken is
// skipped, and a parent index past the directories made so far wraps.
func (in fenceInput) build(t *testing.T, e *fenceEnv) {
	t.Helper()
	dirs := []string{e.ws}
	for _, en := range in.entries {
		name := fenceNames[en.name]
		p := filepath.Join(dirs[en.parent%len(dirs)], name)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		switch en.kind {
		case kindDir:
			require.NoError(t, os.Mkdir(p, 0o755))
			dirs = append(dirs, p)
		case kindFile:
			require.NoError(t, os.WriteFile(p, []byte("secret"), 0o644))
		case kindSymlink:
			require.NoError(t, os.Symlink(e.linkTarget(en.target, name), p))
		default:
			require.NoError(t, os.Link(filepath.Join(e.outside, "secret.txt"), p))
		}
	}
}

// path spells the mutated path.
func (in fenceInput) path(e *fenceEnv) string {
	parts := make([]string, len(in.comps))
	for i, c := range in.comps {
		parts[i] = component(c)
	}
	p := e.prefix(in.prefix) + strings.Join(parts, "/")
	if in.prefix == preRelative && strings.HasPrefix(p, "/") {
		p = "." + p // a leading "" or "//" component keeps the path relative
	}
	if in.trailing {
		p += "/"
	}
	return p
}

// checked reports whether path, cleaned lexically as the backend does, lies
// beneath top (every byte of which is checked) or in /proc.
func (e *fenceEnv) checked(path string) bool {
	if !filepath.IsAbs(path) {
		path = filepath.Join(e.ws, path)
	}
	path = filepath.Clean(path)
	return path == e.top || strings.HasPrefix(path, e.top+"/") || strings.HasPrefix(path, "/proc/")
}

// fenceCall runs call and fails the test if it does not return within
// fenceCallTimeout.
func fenceCall(t *testing.T, call func() (fs.Target, error)) (fs.Target, error) {
	t.Helper()
	type result struct {
		tg  fs.Target
		err error
	}
	done := make(chan result, 1)
	go func() {
		tg, err := call()
		done <- result{tg, err}
	}()
	select {
	case r := <-done:
		return r.tg, r.err
	case <-time.After(fenceCallTimeout):
		t.Fatalf("the call hung for %v", fenceCallTimeout)
		return fs.Target{}, nil
	}
}

// Shorthands for seeds.
func dirAt(parent, name int) fenceEntry { return fenceEntry{kind: kindDir, parent: parent, name: name} }

func fileAt(parent, name int) fenceEntry {
	return fenceEntry{kind: kindFile, parent: parent, name: name}
}

func linkAt(parent, name, target int) fenceEntry {
	return fenceEntry{kind: kindSymlink, parent: parent, name: name, target: target}
}

// Entry names and operations, for seeds.
const (
	nA, nB, nC, nD = 0, 1, 2, 3
	compA, compB   = nA, nB
	compD          = nD
	opWrite        = 0
	opCreate       = 1
	opEdit         = 2
)

// fenceSeeds cover each escape class, under each operation where it differs.
var fenceSeeds = func() []fenceInput {
	var seeds []fenceInput
	classes := []fenceInput{
		// Allowed: a plain file, a new file in new directories, an
		// in-workspace link, absolute and /proc spellings of the workspace.
		{entries: []fenceEntry{fileAt(0, nA)}, comps: []int{compA}},
		{comps: []int{compNew, compNew, compNew}},
		{entries: []fenceEntry{fileAt(0, nA), linkAt(0, nB, tgtSibling)}, comps: []int{compB}},
		{entries: []fenceEntry{fileAt(0, nA)}, prefix: preWS, comps: []int{compA}},
		{entries: []fenceEntry{fileAt(0, nA)}, prefix: preProcRootWS, comps: []int{compA}},
		{entries: []fenceEntry{linkAt(0, nA, tgtBase)}, comps: []int{compA, compWS, compNew}},
		// A directory symlink out with a missing tail.
		{entries: []fenceEntry{linkAt(0, nA, tgtOutside)}, comps: []int{compA, compNew, compNew}},
		{entries: []fenceEntry{linkAt(0, nA, tgtOutsideTail)}, comps: []int{compA, compNew}},
		{entries: []fenceEntry{dirAt(0, nA), linkAt(1, nB, tgtOutsideSub)}, comps: []int{compA, compB, compNew}},
		// .. traversal, lexical and through links.
		{comps: []int{compDotDot, compOutside, compNew}},
		{entries: []fenceEntry{dirAt(0, nA)}, comps: []int{compA, compDotDot, compDotDot, compOutside, compSecret}},
		{entries: []fenceEntry{linkAt(0, nA, tgtUp)}, comps: []int{compA, compOutside, compSecret}},
		{entries: []fenceEntry{dirAt(0, nA), linkAt(1, nB, tgtUpUp)}, comps: []int{compA, compB, compOutside, compNew}},
		{entries: []fenceEntry{linkAt(0, nA, tgtUpOutside)}, comps: []int{compA, compSecret}},
		{entries: []fenceEntry{linkAt(0, nA, tgtUpUpUp)}, comps: []int{compA, compNew}},
		{prefix: preBase, comps: []int{compOutside, compNew}},
		// An absolute link out: to a file, dangling, chained.
		{entries: []fenceEntry{linkAt(0, nA, tgtOutsideFile)}, comps: []int{compA}},
		{entries: []fenceEntry{linkAt(0, nA, tgtOutsideNew)}, comps: []int{compA}},
		{entries: []fenceEntry{linkAt(0, nA, tgtOutsideNew), linkAt(0, nB, tgtSibling)}, comps: []int{compB}},
		{entries: []fenceEntry{linkAt(0, nA, tgtEvil)}, comps: []int{compA, compNew}},
		{prefix: preOutside, comps: []int{compSecret}},
		// /proc spellings.
		{entries: []fenceEntry{linkAt(0, nA, tgtProcRoot)}, comps: []int{compA, compSecret}},
		{entries: []fenceEntry{linkAt(0, nA, tgtProcCwd)}, comps: []int{compA, compNew}},
		{entries: []fenceEntry{linkAt(0, nA, tgtProcFD)}, comps: []int{compA, compSecret}},
		{entries: []fenceEntry{linkAt(0, nA, tgtProcRootWS)}, comps: []int{compA, compNew}},
		{prefix: preProcCwd, comps: []int{compSecret}},
		{prefix: preProcFD, comps: []int{compNew}},
		{prefix: preProcCwd, comps: []int{compDotDot, compNew}},
		// Loops and dangling links.
		{entries: []fenceEntry{linkAt(0, nA, tgtSelf)}, comps: []int{compA}},
		{entries: []fenceEntry{linkAt(0, nA, tgtSelf)}, comps: []int{compA, compNew}},
		{entries: []fenceEntry{dirAt(0, nA), linkAt(1, nB, tgtUp)}, comps: []int{compA, compB, compB, compB, compA, compNew}},
		{entries: []fenceEntry{linkAt(0, nA, tgtDangling)}, comps: []int{compA, compNew}},
		{entries: []fenceEntry{linkAt(0, nA, tgtWS)}, comps: []int{compA, compA, compA, compNew}},
		// Odd spellings: //, ., "", a long name, a trailing slash.
		{entries: []fenceEntry{linkAt(0, nA, tgtOutside)}, comps: []int{compA, compSlashes, compSecret}},
		{entries: []fenceEntry{linkAt(0, nA, tgtOutside)}, comps: []int{compA, compDot}, trailing: true},
		{entries: []fenceEntry{fileAt(0, nA)}, comps: []int{compEmpty, compA, compEmpty}},
		{comps: []int{compLong}},
		{entries: []fenceEntry{dirAt(0, nA)}, comps: []int{compA}, trailing: true},
		{comps: nil},
		// A hard link to an outside file is replaced, the outside kept.
		{entries: []fenceEntry{{kind: kindHardlink, name: nA}}, comps: []int{compA}},
		// A deep tree of every kind.
		{entries: []fenceEntry{
			dirAt(0, nA), dirAt(1, nB), fileAt(2, nC), linkAt(2, nD, tgtUpUp), linkAt(1, nC, tgtOutsideTail),
			linkAt(0, nB, tgtProcRoot), fileAt(0, nC), linkAt(0, nD, tgtSelf), dirAt(2, nA), linkAt(3, nB, tgtUpUpUp),
			fileAt(3, nD), linkAt(1, nA, tgtWSA),
		}, comps: []int{compA, compB, compD, compOutside, compNew}},
	}
	for _, c := range classes {
		for _, op := range []int{opWrite, opCreate, opEdit} {
			c.op = op
			seeds = append(seeds, c)
		}
	}
	return seeds
}()
