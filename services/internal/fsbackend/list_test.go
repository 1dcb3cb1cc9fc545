//go:build linux

package fsbackend_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
)

// entrySummary is "name:type" for each entry, in listing order.
func entrySummary(entries []fs.DirEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Name + ":" + string(e.Type)
	}
	return out
}

// listAll lists the whole directory tg, checking that the listing's total
// counts its entries; on error the entries are nil.
func listAll(ctx context.Context, f *fslocal.FileSystem, tg fs.Target) ([]fs.DirEntry, error) {
	l, err := f.ListDir(ctx, tg, fs.ListWindow{})
	if err != nil {
		return nil, err
	}
	if l.Total != len(l.Entries) {
		return nil, fmt.Errorf("total %d, %d entries", l.Total, len(l.Entries))
	}
	return l.Entries, nil
}

func entryNamed(t *testing.T, entries []fs.DirEntry, name string) fs.DirEntry {
	t.Helper()
	for _, e := range entries {
		if e.Name == name {
			return e
		}
	}
	require.Failf(t, "no such entry", "%q not in %v", name, entrySummary(entries))
	return fs.DirEntry{}
}

func TestListDirOrderAndTypes(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir,
		"skills/zeta.md: abcd",
		"skills/alpha.md: abcde",
		"skills/dir-skill/",
		"skills/broken-link => missing-target",
		"mixed/B.md: b",
		"mixed/a.md: a",
		"mixed/_x: x",
		"mixed/Z: z",
		"mixed/10: 10",
		"mixed/9: 9",
		"mixed/é: e",
		"mixed/a-b: ab",
		"mixed/a.b: ab",
		"empty/",
	)
	ctx := context.Background()

	cases := []struct {
		name string
		path string
		want []string
	}{
		{
			"L-42 entries come in name order with their types", "skills",
			[]string{"alpha.md:file", "broken-link:other", "dir-skill:directory", "zeta.md:file"},
		},
		{
			"L-45 decision 3: order is byte-wise, not localeCompare (upper before lower, digits by byte, UTF-8 last)", "mixed",
			[]string{"10:file", "9:file", "B.md:file", "Z:file", "_x:file", "a-b:file", "a.b:file", "a.md:file", "é:file"},
		},
		{"A-06 an empty directory lists no entries", "empty", []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := fixture.Snapshot(t, dir)
			entries, err := listAll(ctx, f, resolve(t, f, tc.path))
			require.NoError(t, err)
			assert.Equal(t, tc.want, entrySummary(entries))
			assert.Equal(t, before, fixture.Snapshot(t, dir), "listing changes nothing on disk")
		})
	}
}

func TestListDirMetadata(t *testing.T) {
	base := realTempDir(t)
	fixture.Build(t, base,
		"real/zeta.md: abcd",
		"real/alpha.md: abcde",
		"real/dir-skill/inner.txt: x",
		"real/broken-link => missing-target",
		"real/alias.md => alpha.md",
		"real/dlink => dir-skill",
		"real/outside => ../elsewhere/far.txt",
		"elsewhere/far.txt: far away",
		"ws => real",
	)
	realDir, ws := filepath.Join(base, "real"), filepath.Join(base, "ws")
	f, err := fslocal.New(fslocal.Config{Cwd: ws}, nil)
	require.NoError(t, err)
	ctx := context.Background()
	dirTg := resolve(t, f, ".")
	require.Equal(t, ws, dirTg.DisplayPath)
	entries, err := listAll(ctx, f, dirTg)
	require.NoError(t, err)
	require.Equal(t, []string{
		"alias.md:file", "alpha.md:file", "broken-link:other", "dir-skill:directory",
		"dlink:directory", "outside:file", "zeta.md:file",
	}, entrySummary(entries))

	size := func(n int64) *int64 { return &n }
	cases := []struct {
		name     string
		entry    string
		wantKey  string
		wantSize *int64
		wantVer  bool
	}{
		{"L-43 L-44 a file: display under the parent display path, key is its realpath, size and version", "alpha.md", realDir + "/alpha.md", size(5), true},
		{"L-44 a 4-byte file has size 4", "zeta.md", realDir + "/zeta.md", size(4), true},
		{"L-44 a directory carries a version but no size", "dir-skill", realDir + "/dir-skill", nil, true},
		{"L-44 a broken link is other with neither version nor size", "broken-link", realDir + "/broken-link", nil, false},
		{"L-43 a symlink to a file keys to the destination realpath, with its size", "alias.md", realDir + "/alpha.md", size(5), true},
		{"L-43 a symlink to a dir keys to the destination realpath", "dlink", realDir + "/dir-skill", nil, true},
		{"L-43 a symlink out of the dir keys to the far realpath", "outside", base + "/elsewhere/far.txt", size(int64(len("far away"))), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := entryNamed(t, entries, tc.entry)
			assert.Equal(t, ws+"/"+tc.entry, e.Target.DisplayPath, "display path = parent display path + name")
			assert.Equal(t, fs.TargetKey(tc.wantKey), e.Target.Key)
			assert.Equal(t, tc.wantSize, e.Size)
			if !tc.wantVer {
				assert.Empty(t, e.Version)
				return
			}
			assert.NotEmpty(t, e.Version)
			// The entry's metadata is what Stat reports for the same target.
			info, err := f.Stat(ctx, resolve(t, f, tc.entry))
			require.NoError(t, err)
			require.NotNil(t, info)
			assert.Equal(t, info.Version, e.Version)
			assert.Equal(t, info.Type, e.Type)
			assert.Equal(t, resolve(t, f, tc.entry), e.Target, "the entry target equals Resolve of its display path")
		})
	}
}

func TestListDirUsesCapturedIdentity(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir,
		"realOne/same.txt: one",
		"realTwo/same.txt: 2222",
		"realTwo/extra.txt: extra",
		"link => realOne",
	)
	tg := resolve(t, f, "link")
	require.Equal(t, fs.TargetKey(dir+"/realOne"), tg.Key)

	t.Run("L-46 a link repointed after resolve: the listing reads the captured realpath", func(t *testing.T) {
		link := filepath.Join(dir, "link")
		require.NoError(t, os.Remove(link))
		require.NoError(t, os.Symlink("realTwo", link))

		entries, err := listAll(context.Background(), f, tg)
		require.NoError(t, err)
		require.Equal(t, []string{"same.txt:file"}, entrySummary(entries))
		e := entries[0]
		assert.Equal(t, dir+"/link/same.txt", e.Target.DisplayPath)
		assert.Equal(t, fs.TargetKey(dir+"/realOne/same.txt"), e.Target.Key)
		require.NotNil(t, e.Size)
		assert.Equal(t, int64(3), *e.Size)
	})
}

func TestListDirErrors(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir,
		"file.txt: x",
		"dangling => nowhere",
		"loop => loop",
		"full/",
	)
	for i := range 100 {
		fixture.Build(t, dir, fmt.Sprintf("full/f%03d: x", i))
	}
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	dp := func(name string) string { return dir + "/" + name }

	cases := []struct {
		name   string
		ctx    func() context.Context
		path   string
		want   *fs.Error
		msg    string // exact message, or
		prefix string // message prefix followed by an OS reason
		errDP  string // the error's Path when not empty
	}{
		{
			name: "L-47 a missing dir is FS_NOT_FOUND", path: "missing", want: fs.ErrNotFound,
			msg: `cannot list "` + dp("missing") + `": not found`,
		},
		{
			name: "L-47 a dangling symlink is FS_NOT_FOUND", path: "dangling", want: fs.ErrNotFound,
			msg: `cannot list "` + dp("dangling") + `": not found`,
		},
		{
			name: "A-06 L-47 a file is FS_NOT_DIRECTORY", path: "file.txt", want: fs.ErrNotDirectory,
			msg: `cannot list "` + dp("file.txt") + `": not a directory`,
		},
		{
			name: "A-06 a FIFO is FS_NOT_DIRECTORY, without blocking", path: "fifo", want: fs.ErrNotDirectory,
			msg: `cannot list "` + dp("fifo") + `": not a directory`,
		},
		{
			name: "L-47 a pre-cancelled context is FS_ABORTED list aborted", ctx: cancelled, path: "full", want: fs.ErrAborted,
			msg: "list aborted",
		},
		{
			name: "L-47 a pre-cancelled context wins over a missing dir", ctx: cancelled, path: "missing", want: fs.ErrAborted,
			msg: "list aborted",
		},
		{
			name: "L-47 approximated: a cancel while children are being read is FS_ABORTED", ctx: func() context.Context { return abortAfterChecks(2) },
			path: "full", want: fs.ErrAborted, msg: "list aborted",
		},
		{
			name: "L-49 a self-referential symlink loop as target is FS_IO_ERROR", path: "loop", want: fs.ErrIOError,
			prefix: `cannot list "` + dp("loop") + `": `, errDP: dp("loop"),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = tc.ctx()
			}
			tg := resolve(t, f, tc.path)
			var entries []fs.DirEntry
			err := within(t, time.Second, "ListDir", func() error {
				var err error
				entries, err = listAll(ctx, f, tg)
				return err
			})
			expectFSErr(t, err, tc.want, tc.msg)
			assert.Nil(t, entries, "never a partial listing")
			if tc.prefix != "" {
				assert.True(t, strings.HasPrefix(err.Error(), tc.prefix), "%q has prefix %q", err.Error(), tc.prefix)
				assert.Greater(t, len(err.Error()), len(tc.prefix), "the OS reason follows")
			}
			if tc.errDP != "" {
				fe, _ := errors.AsType[*fs.Error](err)
				require.NotNil(t, fe)
				assert.Equal(t, tc.errDP, fe.Path)
			}
		})
	}
}

func TestListDirNeverReadsContents(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "d/a.txt: aaa", "d/z.txt: zz")
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "d", "pipe"), 0o644))
	fixture.Build(t, dir, "d/pipelink => pipe")

	t.Run("L-52 a FIFO child with no writer does not block the listing", func(t *testing.T) {
		var entries []fs.DirEntry
		err := within(t, time.Second, "ListDir", func() error {
			var err error
			entries, err = listAll(context.Background(), f, resolve(t, f, "d"))
			return err
		})
		require.NoError(t, err)
		assert.Equal(t, []string{"a.txt:file", "pipe:other", "pipelink:other", "z.txt:file"}, entrySummary(entries))
		p := entryNamed(t, entries, "pipe")
		assert.NotEmpty(t, p.Version, "a FIFO has metadata")
		assert.Nil(t, p.Size, "only files carry a size")
	})
}

// nobodyEnv names the environment variable that carries the fixture
// directory to a test binary re-run as the unprivileged user nobody.
const nobodyEnv = "HARNESS_AS_NOBODY"

// asNobody prepares the fixture of a test whose checks need a process without
// root's permission override (mode-000 entries). It returns the fixture
// directory and whether the caller must run its checks now. Running as root,
// it builds the fixture, re-runs this very test as uid/gid 65534 through
// setpriv, asserts the child passed and returns run=false; in that child (or
// when not root in the first place) it returns run=true. Call it at the top
// of a top-level test only.
func asNobody(t *testing.T, build func(dir string)) (dir string, run bool) {
	t.Helper()
	if dir := os.Getenv(nobodyEnv); dir != "" {
		require.NotZero(t, os.Geteuid(), "the re-run must not be root")
		return dir, true
	}
	base := realTempDir(t)
	// t.TempDir's parent is private (0700); open the chain to nobody.
	require.NoError(t, os.Chmod(filepath.Dir(base), 0o755))
	require.NoError(t, os.Chmod(base, 0o755))
	dir = filepath.Join(base, "fixture")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() {
		// Let a non-root cleanup remove mode-000 entries.
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			_ = os.Chmod(p, 0o755)
			return nil
		})
	})
	build(dir)
	if os.Geteuid() != 0 {
		return dir, true
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skipf("running as root and setpriv is missing, cannot drop privileges: %v", err)
	}
	// The test binary lives in a private build dir: copy it where nobody can
	// execute it.
	self, err := os.Executable()
	require.NoError(t, err)
	bin := filepath.Join(base, "fslocal.test")
	copyExecutable(t, self, bin)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
		bin, "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), nobodyEnv+"="+dir)
	cmd.Dir = base
	out, err := cmd.CombinedOutput()
	t.Logf("re-run as nobody:\n%s", out)
	require.NoError(t, err, "the re-run as nobody failed")
	assert.Contains(t, string(out), "--- PASS: "+t.Name()+" ")
	assert.NotContains(t, string(out), "--- SKIP")
	return dir, false
}

func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	require.NoError(t, err)
	defer func() { _ = src.Close() }()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
}

func TestPermissionDeniedAsNobody(t *testing.T) {
	dir, run := asNobody(t, func(dir string) {
		fixture.Build(t, dir,
			"locked/secret.txt: secret",
			"listed/ok.txt: ok",
			"listed/into-locked => ../locked/secret.txt",
			"plain/ok.txt: ok",
			"plain/noread.txt: hidden",
		)
		require.NoError(t, os.Chmod(filepath.Join(dir, "plain", "noread.txt"), 0o000))
		require.NoError(t, os.Chmod(filepath.Join(dir, "locked"), 0o000))
	})
	if !run {
		return
	}
	f, err := fslocal.New(fslocal.Config{Cwd: dir}, nil)
	require.NoError(t, err)
	ctx := context.Background()
	dp := func(name string) string { return dir + "/" + name }

	t.Run("L-48 a mode-000 directory is FS_PERMISSION_DENIED", func(t *testing.T) {
		entries, err := listAll(ctx, f, resolve(t, f, "locked"))
		expectFSErr(t, err, fs.ErrPermissionDenied, `cannot list "`+dp("locked")+`": permission denied`)
		assert.Nil(t, entries)
	})

	t.Run("decision 16 (supersedes L-51): a child symlink into a mode-000 directory is listed as other, permission denied", func(t *testing.T) {
		entries, err := listAll(ctx, f, resolve(t, f, "listed"))
		require.NoError(t, err)
		assert.Equal(t, []string{"into-locked:other", "ok.txt:file"}, entrySummary(entries))
		bad := entryNamed(t, entries, "into-locked")
		assert.Equal(t, "permission denied", bad.Reason)
		assert.Empty(t, bad.Version)
		assert.Nil(t, bad.Size)
		assert.Empty(t, entryNamed(t, entries, "ok.txt").Reason)
	})

	t.Run("L-52 an unreadable file is listed from metadata alone", func(t *testing.T) {
		entries, err := listAll(ctx, f, resolve(t, f, "plain"))
		require.NoError(t, err)
		assert.Equal(t, []string{"noread.txt:file", "ok.txt:file"}, entrySummary(entries))
		e := entryNamed(t, entries, "noread.txt")
		require.NotNil(t, e.Size)
		assert.Equal(t, int64(len("hidden")), *e.Size)
		assert.NotEmpty(t, e.Version)
	})

	t.Run("L-29 reading an unreadable file is FS_PERMISSION_DENIED", func(t *testing.T) {
		tg := resolve(t, f, "plain/noread.txt")
		msg := `cannot read "` + dp("plain/noread.txt") + `": permission denied`
		_, err := f.ReadText(ctx, tg)
		expectFSErr(t, err, fs.ErrPermissionDenied, msg)
		expectFSErr(t, drainStream(f.StreamText(ctx, tg)).err, fs.ErrPermissionDenied, msg)
		_, err = f.ReadBytes(ctx, tg, 100)
		expectFSErr(t, err, fs.ErrPermissionDenied, msg)
	})

	t.Run("L-18 stat of an unreadable file still reports its metadata", func(t *testing.T) {
		info, err := f.Stat(ctx, resolve(t, f, "plain/noread.txt"))
		require.NoError(t, err)
		require.NotNil(t, info)
		assert.Equal(t, fs.TypeFile, info.Type)
	})

	t.Run("resolving through a mode-000 directory is FS_PERMISSION_DENIED", func(t *testing.T) {
		_, err := f.Resolve(ctx, "locked/secret.txt", fs.ResolveOptions{})
		expectFSErr(t, err, fs.ErrPermissionDenied, `cannot resolve "`+dp("locked/secret.txt")+`": permission denied`)
	})

	t.Run("stat and lstat inside a mode-000 directory are FS_PERMISSION_DENIED, not absent", func(t *testing.T) {
		tg := fs.Target{Key: fs.TargetKey(dp("locked/secret.txt")), DisplayPath: dp("locked/secret.txt")}
		info, err := f.Stat(ctx, tg)
		expectFSErr(t, err, fs.ErrPermissionDenied, "")
		assert.Nil(t, info)
		li, err := f.Lstat(ctx, "locked/secret.txt", fs.ResolveOptions{})
		expectFSErr(t, err, fs.ErrPermissionDenied, "")
		assert.Nil(t, li)
	})
}
