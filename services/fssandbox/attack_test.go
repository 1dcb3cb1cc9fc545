//go:build linux

package fssandbox_test

// Attacks on the write fence beyond escape_test.go and race_test.go: crafted
// targets handed straight to the mutations, a workspace root replaced after
// construction, odd per-call roots, a symlink-count ELOOP that makes the
// canonical key lie, special files, a swapped final component, a hijacked
// staging directory and a swapped fence-created parent. Every attack checks
// the disk outside the workspace.
//
// Two fail against the current fence, on purpose: a workspace root replaced
// by a symlink moves the fence (TestAttackWorkspaceRootReplacedBySymlink),
// and a malformed per-call root grants a directory the caller never named
// (TestAttackMalformedPolicyRoot).

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// attackWorld is a world with a secret file on both sides, so every mutation
// (write, guarded create, edit of "secret") has something to aim at.
func attackWorld(t *testing.T) world {
	t.Helper()
	w := newWorld(t)
	fixture.Build(t, w.outside, "secret.txt: secret")
	fixture.Build(t, w.ws, "secret.txt: secret")
	return w
}

// assertOutsideIntact checks that nothing outside the workspace changed and
// that no staging entry is left anywhere under the base.
func assertOutsideIntact(t *testing.T, w world, before map[string]string) {
	t.Helper()
	assert.Equal(t, before, fixture.Snapshot(t, w.outside), "the outside directory changed: an escape")
	assert.Empty(t, fixture.Residue(t, w.base), "staging residue")
}

// TestAttackWorkspaceRootReplacedBySymlink replaces the configured (already
// canonical) workspace directory itself with a symlink to the outside
// directory after the backend is built. README "Roots are pinned" says the
// root is opened once at construction and a retargeted symlink does not move
// the fence; but WritableRoots re-canonicalizes the policy's root on every
// call and the pinned map is keyed by the old spelling, so the root becomes
// the symlink's destination, opened by path, and every mutation lands
// outside. The same holds for a session policy whose cwd was canonicalized
// when the session was made, which README offers as the way to pin it:
// Resolve canonicalizes it again on every call.
func TestAttackWorkspaceRootReplacedBySymlink(t *testing.T) {
	swaps := map[string]func(t *testing.T, w world){
		"rename and symlink": func(t *testing.T, w world) {
			require.NoError(t, os.Rename(w.ws, w.ws+".real"))
			require.NoError(t, os.Symlink(w.outside, w.ws))
		},
		"atomic exchange with a relative symlink": func(t *testing.T, w world) {
			require.NoError(t, os.Symlink("outside", w.ws+".swap"))
			require.NoError(t, unix.Renameat2(unix.AT_FDCWD, w.ws, unix.AT_FDCWD, w.ws+".swap", unix.RENAME_EXCHANGE))
		},
	}
	policies := map[string]func(t *testing.T, w world) *sandbox.ExecutionPolicy{
		"default policy": func(*testing.T, world) *sandbox.ExecutionPolicy { return nil },
		"session policy": func(t *testing.T, w world) *sandbox.ExecutionPolicy {
			svc, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: w.ws, TempRoots: []string{}})
			require.NoError(t, err)
			p := svc.Resolve(session.New("s", sandboxpolicy.CanonicalPath(w.ws)), sandbox.FileTools, "")
			return &p
		},
	}
	paths := map[string]string{"write": "new.txt", "guarded create": "new.txt", "edit": "secret.txt"}
	for swapName, swap := range swaps {
		for polName, policy := range policies {
			for _, m := range mutations {
				t.Run(swapName+"/"+polName+"/"+m.name, func(t *testing.T) {
					w := attackWorld(t)
					f := w.sandbox(t, sandbox.WorkspaceWrite)
					pol := policy(t, w) // the session is made before the swap
					swap(t, w)
					before := fixture.Snapshot(t, w.outside)
					for _, p := range []string{paths[m.name], filepath.Join(w.ws, paths[m.name])} {
						err := runWith(context.Background(), f, m.name, fs.Target{DisplayPath: p}, pol)
						t.Logf("%s %s: %v", m.name, p, err)
					}
					assertOutsideIntact(t, w, before)
				})
			}
		}
	}
}

// runWith runs the mutation named name (one of mutations) under pol.
func runWith(ctx context.Context, f *fssandbox.FileSystem, name string, tg fs.Target, pol *sandbox.ExecutionPolicy) error {
	var err error
	switch name {
	case "write":
		_, err = f.WriteText(ctx, tg, "pwned", fs.WriteOptions{Policy: pol})
	case "guarded create":
		_, err = f.WriteText(ctx, tg, "pwned", fs.WriteOptions{Intent: fs.CreateOnly(), Policy: pol})
	default:
		_, err = f.EditText(ctx, tg, fs.EditRequest{OldString: "secret", NewString: "pwned", ReplaceAll: true, Policy: pol})
	}
	return err
}

// TestAttackWorkspaceRootRenamedAway is the control of the test above: the
// workspace directory is renamed beside it (and a fresh, empty one made in its
// place, or not). The pinned handle follows the old directory, and the
// per-mutation check of its current path denies, so nothing lands in the old
// directory, now outside the root.
func TestAttackWorkspaceRootRenamedAway(t *testing.T) {
	for _, fresh := range []bool{false, true} {
		for _, m := range mutations {
			t.Run(m.name+"/fresh="+strconv.FormatBool(fresh), func(t *testing.T) {
				w := attackWorld(t)
				f := w.sandbox(t, sandbox.WorkspaceWrite)
				old := w.ws + ".old"
				require.NoError(t, os.Rename(w.ws, old))
				if fresh {
					require.NoError(t, os.Mkdir(w.ws, 0o755))
				}
				before := fixture.Snapshot(t, w.base)
				for _, p := range []string{"secret.txt", "new.txt", "n/deep.txt"} {
					// Denied, or refused earlier from what the moved directory
					// holds (it exists, or it does not): never applied.
					require.Error(t, m.run(context.Background(), f, fs.Target{DisplayPath: p}), p)
				}
				assert.Equal(t, before, fixture.Snapshot(t, w.base), "the old workspace, the new one or the outside changed")
				assert.Empty(t, fixture.Residue(t, w.base), "staging residue")
			})
		}
	}
}

// TestAttackMalformedPolicyRoot passes per-call policies whose workspace root
// is not a clean absolute path. ExecutionPolicy documents an absolute root and
// ContainsPath fails closed on a relative one, but WritableRoots first runs
// CanonicalPath, which resolves a relative root against the process working
// directory, and returns a root it cannot open (EINVAL for a NUL byte)
// unchanged, after which filepath.Clean collapses "x\x00/.." to the parent.
// Either way the fence grants a root the caller never named; here it is the
// outside directory or the base above the workspace.
func TestAttackMalformedPolicyRoot(t *testing.T) {
	w := attackWorld(t)
	f := w.sandbox(t, sandbox.ReadOnly)
	wd, err := os.Getwd()
	require.NoError(t, err)
	rel, err := filepath.Rel(wd, w.outside)
	require.NoError(t, err)
	for name, root := range map[string]string{
		"relative to the process working directory": rel,
		"NUL then dot-dot":                          w.ws + "\x00/..",
	} {
		t.Run(name, func(t *testing.T) {
			before := fixture.Snapshot(t, w.outside)
			pol := &sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: root}
			_, err := f.WriteText(context.Background(), fs.Target{DisplayPath: filepath.Join(w.outside, "new.txt")}, "pwned", fs.WriteOptions{Policy: pol})
			assertDenied(t, err, sandbox.WorkspaceWrite)
			assertOutsideIntact(t, w, before)
		})
	}
}

// TestAttackOddPolicyRoots: per-call roots that must grant nothing outside the
// workspace (and, for most, nothing at all).
func TestAttackOddPolicyRoots(t *testing.T) {
	w := attackWorld(t)
	fixture.Build(t, w.ws, "afile: x", "wsalias => "+w.ws)
	f := w.sandbox(t, sandbox.ReadOnly)
	cases := []struct {
		name, root string
		inside     bool // a write inside the workspace lands
	}{
		{"empty", "", false},
		{"a regular file", filepath.Join(w.ws, "afile"), false},
		{"a missing directory", filepath.Join(w.ws, "missing"), false},
		{"a missing relative directory", "no-such-dir-here", false},
		{"a symlink to the workspace (roots must be canonical: refused)", filepath.Join(w.ws, "wsalias"), false},
		{"a non-clean spelling of the workspace", w.ws + "//./", true},
		{"/proc/self/cwd is not the workspace", "/proc/self/cwd", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := fixture.Snapshot(t, w.outside)
			pol := &sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: tc.root}
			_, err := f.WriteText(context.Background(), fs.Target{DisplayPath: filepath.Join(w.outside, "new.txt")}, "pwned", fs.WriteOptions{Policy: pol})
			assertDenied(t, err, sandbox.WorkspaceWrite)
			_, err = f.WriteText(context.Background(), fs.Target{DisplayPath: filepath.Join(w.ws, "inside.txt")}, "ok", fs.WriteOptions{Policy: pol})
			if tc.inside {
				require.NoError(t, err)
			} else {
				assertDenied(t, err, sandbox.WorkspaceWrite)
			}
			assertOutsideIntact(t, w, before)
		})
	}
}

// TestAttackCraftedTargets hands targets straight to the mutations, never
// through Resolve: every Key is a stale pointer at the outside secret, and
// the display paths are relative, non-clean, empty, NUL-laden or /proc and
// /dev spellings. Nothing outside may change, nothing may hang.
func TestAttackCraftedTargets(t *testing.T) {
	w := attackWorld(t)
	fixture.Build(t, w.ws, "d/", "linkout => ../outside", "procself => /proc/thread-self")
	dir, err := os.Open(w.outside)
	require.NoError(t, err)
	t.Cleanup(func() { _ = dir.Close() })
	outfd := strconv.Itoa(int(dir.Fd()))
	f := w.sandbox(t, sandbox.WorkspaceWrite)
	key := fs.TargetKey(filepath.Join(w.outside, "secret.txt"))
	for _, dp := range []string{
		"", " ", "\x00", "secret.txt\x00/../../outside/secret.txt",
		"../outside/secret.txt", "d/../../outside/secret.txt", "./../outside/new.txt",
		w.ws + "/../outside/secret.txt", w.ws + "//..//outside//secret.txt",
		"linkout/secret.txt", "linkout/./secret.txt/", "linkout/.", "linkout//new/deep.txt",
		"//" + w.outside[1:] + "/new.txt",
		"/proc/thread-self/root" + w.outside + "/secret.txt",
		"/proc/thread-self/fd/" + outfd + "/secret.txt",
		"/dev/fd/" + outfd + "/new.txt",
		"/proc/self/fd/" + outfd + "/../outside/secret.txt",
		"procself/root" + w.outside + "/secret.txt",
		"procself/fd/" + outfd + "/new.txt",
		w.outside + "/secret.txt/.",
		"\u2024\u2024/outside/secret.txt", // one-dot leaders, not dots: lands inside
		"d/\u002e\u002e/\u002e\u002e/outside/secret.txt",
	} {
		for _, m := range mutations {
			t.Run(m.name+"/"+strings.ReplaceAll(dp, "/", "|"), func(t *testing.T) {
				before := fixture.Snapshot(t, w.outside)
				_ = withinHangBound(t, func() error { return m.run(context.Background(), f, fs.Target{Key: key, DisplayPath: dp}) })
				assertOutsideIntact(t, w, before)
			})
		}
	}
}

// TestAttackLinkCountLie makes the canonical key lie: ws/a is a chain of 39
// symlinks to ws/real, and ws/real/b a chain of two to the outside
// directory. Resolving ws/a/b/... hits the kernel's 40-link limit, realpath
// treats the ELOOP component as missing, and the key comes out as
// ws/real/b/..., lexically inside the workspace. The fence admits it; only
// the confined syscalls (where ws/real/b alone is two links) stand between
// the write and the outside.
func TestAttackLinkCountLie(t *testing.T) {
	w := attackWorld(t)
	fixture.Build(t, w.ws, "real/", "real/b => b2", "real/b2 => ../../outside", "real/f => f2", "real/f2 => ../../outside/secret.txt")
	prev := "real"
	for i := range 39 {
		name := "a" + strconv.Itoa(i)
		fixture.Build(t, w.ws, name+" => "+prev)
		prev = name
	}
	chain := prev // 39 links to ws/real
	f := w.sandbox(t, sandbox.WorkspaceWrite)
	for _, p := range []string{chain + "/b/secret.txt", chain + "/b/new.txt", chain + "/b/newdir/deep.txt", chain + "/f"} {
		tg, err := f.Resolve(context.Background(), p, fs.ResolveOptions{})
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(tg.Key), w.ws+"/"), "the key lies inside: %s", tg.Key)
		for _, m := range slices.Backward(mutations) { // edit first: a write replaces the link
			t.Run(m.name+"/"+p, func(t *testing.T) {
				before := fixture.Snapshot(t, w.outside)
				err := withinHangBound(t, func() error { return m.run(context.Background(), f, tg) })
				t.Logf("%v", err)
				assertOutsideIntact(t, w, before)
			})
		}
	}
}

// TestAttackSpecialFiles: FIFOs, a socket and a device as the target, as a
// parent, and through /proc spellings of a pipe; a FIFO outside behind a
// link. No call may hang, nothing outside may change.
func TestAttackSpecialFiles(t *testing.T) {
	w := attackWorld(t)
	require.NoError(t, unix.Mkfifo(filepath.Join(w.ws, "fifo"), 0o644))
	require.NoError(t, unix.Mkfifo(filepath.Join(w.outside, "fifo"), 0o644))
	fixture.Build(t, w.ws, "fifolink => "+filepath.Join(w.outside, "fifo"), "relfifo => fifo")
	sock, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(sock) })
	require.NoError(t, unix.Bind(sock, &unix.SockaddrUnix{Name: filepath.Join(w.ws, "sock")}))
	paths := []string{"fifo", "fifo/x.txt", "fifolink", "relfifo", "sock", "sock/x.txt"}
	if unix.Mknod(filepath.Join(w.ws, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))) == nil {
		paths = append(paths, "null", "null/x.txt")
	}
	var pipe [2]int
	require.NoError(t, unix.Pipe(pipe[:]))
	t.Cleanup(func() { _ = unix.Close(pipe[0]); _ = unix.Close(pipe[1]) })
	paths = append(paths, "/proc/self/fd/"+strconv.Itoa(pipe[0]), "/dev/fd/"+strconv.Itoa(pipe[1]))
	f := w.sandbox(t, sandbox.WorkspaceWrite)
	for _, p := range paths {
		for _, m := range mutations {
			t.Run(m.name+"/"+p, func(t *testing.T) {
				before := fixture.Snapshot(t, w.outside)
				err := withinHangBound(t, func() error { return m.run(context.Background(), f, fs.Target{DisplayPath: p}) })
				require.Error(t, err)
				assertOutsideIntact(t, w, before)
			})
		}
	}
}

// swapper runs swap in a loop on its own goroutine until the returned stop
// is called; stop waits for it.
func swapper(swap func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
				swap()
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// TestAttackFinalComponentSwap exchanges the final component ws/f.txt between
// a regular file and a symlink to the outside secret (relative, so it also
// escapes by "..") while two sandboxes on the same workspace write, create
// and edit it.
func TestAttackFinalComponentSwap(t *testing.T) {
	ops := 300
	if testing.Short() {
		ops = 30 // make check's tier: the same race, a tenth as long
	}
	w := attackWorld(t)
	fixture.Build(t, w.ws, "f.txt: secret", "f.swap => ../outside/secret.txt")
	fs1, fs2 := w.sandbox(t, sandbox.WorkspaceWrite), w.sandbox(t, sandbox.WorkspaceWrite)
	before := fixture.Snapshot(t, w.outside)
	var swaps atomic.Int64
	stop := swapper(func() {
		if unix.Renameat2(unix.AT_FDCWD, filepath.Join(w.ws, "f.txt"), unix.AT_FDCWD, filepath.Join(w.ws, "f.swap"), unix.RENAME_EXCHANGE) == nil {
			swaps.Add(1)
		}
	})
	var landed atomic.Int64
	var writers sync.WaitGroup
	for g, f := range []*fssandbox.FileSystem{fs1, fs2} {
		writers.Go(func() {
			for i := range ops {
				m := mutations[(i+g)%len(mutations)]
				if m.run(context.Background(), f, fs.Target{DisplayPath: "f.txt"}) == nil {
					landed.Add(1)
				}
			}
		})
	}
	writers.Wait()
	stop()
	t.Logf("landed=%d swaps=%d", landed.Load(), swaps.Load())
	assertOutsideIntact(t, w, before)
	assert.Positive(t, swaps.Load())
}

// TestAttackStagingHijack watches the workspace for staging directories and,
// as soon as one appears, moves it aside (inside the workspace), puts a
// symlink to the outside directory under its name, and plants a symlink to
// the outside secret as the temp file in the moved directory (or renames one
// over the temp file already there), so the temp file, the publication and
// the cleanup all meet links pointing out; a replace through an unnamed file
// meets a link to the outside secret planted under its temporary name.
// Writes, guarded creates and edits all stage.
func TestAttackStagingHijack(t *testing.T) {
	const ops = 60
	w := attackWorld(t)
	f := w.sandbox(t, sandbox.WorkspaceWrite)
	before := fixture.Snapshot(t, w.outside)
	var hijacks, planted, failed atomic.Int64
	stop := swapper(func() {
		names, err := os.ReadDir(w.ws)
		if err != nil {
			return
		}
		for _, e := range names {
			if strings.HasSuffix(e.Name(), ".tmp") && e.Type().IsRegular() {
				// An unnamed file's temporary name, between its link and
				// its rename: put a link to the outside secret under it.
				link := filepath.Join(w.ws, e.Name()+".link")
				if os.Symlink("../outside/secret.txt", link) == nil && os.Rename(link, filepath.Join(w.ws, e.Name())) == nil {
					planted.Add(1)
				}
				continue
			}
			if !strings.HasSuffix(e.Name(), ".tmpdir") || e.Type()&os.ModeSymlink != 0 {
				continue
			}
			p := filepath.Join(w.ws, e.Name())
			stolen := filepath.Join(w.ws, "stolen-"+strconv.FormatInt(hijacks.Add(1), 10))
			if os.Rename(p, stolen) != nil {
				continue
			}
			_ = os.Symlink("../outside", p)
			// ".<base>.<pid>.<uuid>.tmpdir" stages "<base>.tmp".
			parts := strings.Split(strings.TrimPrefix(e.Name(), "."), ".")
			temp := filepath.Join(stolen, strings.Join(parts[:len(parts)-3], ".")+".tmp")
			link := stolen + ".link"
			if os.Symlink("../../outside/secret.txt", link) == nil && os.Rename(link, temp) == nil {
				planted.Add(1)
			}
		}
	})
	ctx := context.Background()
	big := "secret" + strings.Repeat(".", 1<<20) // widens the staging window
	for i := range ops {
		tg := fs.Target{DisplayPath: "f" + strconv.Itoa(i%5) + ".txt"}
		var err error
		switch i % 3 {
		case 0:
			_, err = f.WriteText(ctx, tg, big, fs.WriteOptions{})
		case 1:
			_, err = f.EditText(ctx, tg, fs.EditRequest{OldString: "secret", NewString: "pwned"})
		default:
			_, err = f.WriteText(ctx, fs.Target{DisplayPath: "new" + strconv.Itoa(i) + ".txt"}, big, fs.WriteOptions{Intent: fs.CreateOnly()})
		}
		if err != nil {
			failed.Add(1)
		}
	}
	stop()
	published := 0
	for i := range 5 {
		if _, err := os.Readlink(filepath.Join(w.ws, "f"+strconv.Itoa(i)+".txt")); err == nil {
			published++ // the fence renamed the planted link into place
		}
	}
	t.Logf("hijacks=%d planted=%d failed=%d targets-now-links=%d", hijacks.Load(), planted.Load(), failed.Load(), published)
	assert.Equal(t, before, fixture.Snapshot(t, w.outside), "the outside directory changed: an escape")
	for _, r := range fixture.Residue(t, w.base) {
		assert.True(t, strings.HasPrefix(r, w.ws+"/"), "residue outside the workspace: %s", r)
	}
}

// TestAttackFenceCreatedParentSwap lets the fence create ws/p/q/r for
// missing-parent writes while another goroutine exchanges ws/p/q, once the
// fence has made it, with a relative symlink pointing out, and now and then
// removes the whole tree so the fence makes it again.
func TestAttackFenceCreatedParentSwap(t *testing.T) {
	const ops = 300
	w := attackWorld(t)
	f := w.sandbox(t, sandbox.WorkspaceWrite)
	before := fixture.Snapshot(t, w.outside)
	link := filepath.Join(w.ws, "q.swap")
	q := filepath.Join(w.ws, "p", "q")
	require.NoError(t, os.Symlink("../../outside", link)) // from ws/p/q after the exchange
	var swaps atomic.Int64
	stop := swapper(func() {
		if unix.Renameat2(unix.AT_FDCWD, q, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE) == nil {
			if swaps.Add(1)%25 == 0 {
				_ = os.RemoveAll(filepath.Join(w.ws, "p"))
				if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
					_ = os.RemoveAll(link)
					_ = os.Symlink("../../outside", link)
				}
			}
		}
	})
	var landed, denied atomic.Int64
	for i := range ops {
		err := mutations[i%2].run(context.Background(), f, fs.Target{DisplayPath: "p/q/r/f" + strconv.Itoa(i) + ".txt"})
		switch {
		case err == nil:
			landed.Add(1)
		case errors.Is(err, fs.ErrSandboxDenied):
			denied.Add(1)
		}
	}
	stop()
	t.Logf("landed=%d denied=%d swaps=%d", landed.Load(), denied.Load(), swaps.Load())
	assertOutsideIntact(t, w, before)
	assert.Positive(t, swaps.Load())
}

// TestAttackLongNameLeavesNothing: a name over NAME_MAX under missing
// parents (two, then a 600-deep tree): the write fails and no parent is
// left behind. (A name of up to NAME_MAX bytes is writable: the staging
// names cut the base to fit; see TestLongestNameIsWritable.)
func TestAttackLongNameLeavesNothing(t *testing.T) {
	w := attackWorld(t)
	f := w.sandbox(t, sandbox.WorkspaceWrite)
	wsBefore, before := fixture.Snapshot(t, w.ws), fixture.Snapshot(t, w.outside)
	for _, dir := range []string{"n1/n2/", strings.Repeat("d/", 600)} {
		for _, m := range mutations[:2] {
			err := within(t, 30*time.Second, func() error { // 600 durable mkdirs are slow under -race
				return m.run(context.Background(), f, fs.Target{DisplayPath: dir + strings.Repeat("x", 256)})
			})
			require.Error(t, err)
		}
	}
	assert.Equal(t, wsBefore, fixture.Snapshot(t, w.ws), "a failed write left something in the workspace")
	assertOutsideIntact(t, w, before)
}

// TestLongestNameIsWritable: a target name of NAME_MAX bytes is written; the
// staging directory and temp file names are cut to fit.
func TestLongestNameIsWritable(t *testing.T) {
	w := newWorld(t)
	f := w.sandbox(t, sandbox.WorkspaceWrite)
	name := strings.Repeat("é", 127) + "x" // 255 bytes
	tg, err := f.Resolve(context.Background(), filepath.Join(w.ws, "deep", name), fs.ResolveOptions{})
	require.NoError(t, err)
	_, err = f.WriteText(context.Background(), tg, "long", fs.WriteOptions{})
	require.NoError(t, err)
	assert.Equal(t, "long", readFile(t, filepath.Join(w.ws, "deep", name)))
	assert.Empty(t, fixture.Residue(t, w.base))
}
