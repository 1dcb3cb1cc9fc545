//go:build linux

package subproc_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/subproc"
)

// TestReserve: a missing path gets a placeholder (a 0555 empty directory,
// or a 0444 file holding its content) that a second reservation joins and
// only the last release removes; something real there, an empty one of the
// user's included, is neither reserved nor touched; a missing parent is
// no reservation.
func TestReserve(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, content string
		dir           bool
	}{{name: "hooks", dir: true}, {name: "config.worktree"}, {name: "commondir", content: ".\n"}} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name)
			reserve := func() *subproc.Reservation {
				t.Helper()
				var r *subproc.Reservation
				var err error
				if c.dir {
					r, err = subproc.Reserve(p, true)
				} else {
					r, err = subproc.ReserveFile(p, c.content)
				}
				require.NoError(t, err)
				return r
			}
			a := reserve()
			require.NotNil(t, a)
			st, err := os.Lstat(p)
			require.NoError(t, err)
			if c.dir {
				assert.Equal(t, os.ModeDir|0o555, st.Mode())
			} else {
				assert.Equal(t, os.FileMode(0o444), st.Mode())
				got, err := os.ReadFile(p)
				require.NoError(t, err)
				assert.Equal(t, c.content, string(got))
			}
			b := reserve()
			require.NotNil(t, b, "a second command joins the placeholder")
			subproc.ReleaseAll(a)
			_, err = os.Lstat(p)
			require.NoError(t, err, "still held by the second")
			subproc.ReleaseAll(b)
			_, err = os.Lstat(p)
			assert.True(t, os.IsNotExist(err), "the last release removes it")
		})
	}
	t.Run("a user's empty file or directory is real", func(t *testing.T) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "attributes"), nil, 0o644))
		require.NoError(t, os.Mkdir(filepath.Join(dir, ".vscode"), 0o755))
		r, err := subproc.ReserveFile(filepath.Join(dir, "attributes"), "")
		require.NoError(t, err)
		assert.Nil(t, r)
		r, err = subproc.Reserve(filepath.Join(dir, ".vscode"), true)
		require.NoError(t, err)
		assert.Nil(t, r)
		st, err := os.Lstat(filepath.Join(dir, ".vscode"))
		require.NoError(t, err)
		assert.Equal(t, os.ModeDir|0o755, st.Mode())
	})
	t.Run("a user's empty one with a placeholder's mode is real", func(t *testing.T) {
		// The attack review's input: `mkdir .vscode; chmod 555 .vscode;
		// : > .envrc; chmod 444 .envrc`, then any command: both were
		// removed as if they were placeholders.
		d, f := filepath.Join(dir, ".vscode555"), filepath.Join(dir, ".envrc")
		require.NoError(t, os.Mkdir(d, 0o755))
		require.NoError(t, os.Chmod(d, 0o555))
		require.NoError(t, os.WriteFile(f, nil, 0o644))
		require.NoError(t, os.Chmod(f, 0o444))
		r, err := subproc.Reserve(d, true)
		require.NoError(t, err)
		assert.Nil(t, r, "not joined as a placeholder")
		r, err = subproc.ReserveFile(f, "")
		require.NoError(t, err)
		assert.Nil(t, r, "not joined as a placeholder")
		st, err := os.Lstat(d)
		require.NoError(t, err, "the user's directory is still there")
		assert.Equal(t, os.ModeDir|0o555, st.Mode())
		st, err = os.Lstat(f)
		require.NoError(t, err, "the user's file is still there")
		assert.Equal(t, os.FileMode(0o444), st.Mode())
	})
	t.Run("a missing parent is no reservation", func(t *testing.T) {
		r, err := subproc.Reserve(filepath.Join(dir, "no", "hooks"), true)
		require.NoError(t, err)
		assert.Nil(t, r)
		_, err = os.Lstat(filepath.Join(dir, "no"))
		assert.True(t, os.IsNotExist(err))
	})
}

// TestReserveEither: a name an empty directory or a named pipe can hold (a
// root's `.git`) is reserved as the type its caller prefers when missing
// (a pipe of mode 0400), and as the type already there
// when another command holds the other one: both then hold it, the first
// release leaves it, the last removes it. Reserve of the other type would
// hold nothing, and the name would be free once the first command ended.
// A user's empty file or directory is still real.
func TestReserveEither(t *testing.T) {
	dir := t.TempDir()
	typeOf := func(p string) os.FileMode {
		t.Helper()
		st, err := os.Lstat(p)
		require.NoError(t, err)
		return st.Mode()
	}
	for _, first := range []bool{true, false} {
		p := filepath.Join(dir, ".git"+strconv.FormatBool(first))
		want := os.ModeNamedPipe | 0o400
		if first {
			want = os.ModeDir | 0o555
		}
		a, err := subproc.ReserveEither(p, first)
		require.NoError(t, err)
		require.NotNil(t, a)
		assert.Equal(t, first, a.Dir)
		assert.Equal(t, !first, a.FIFO)
		assert.Equal(t, want, typeOf(p))
		other, err := subproc.Reserve(p, !first)
		require.NoError(t, err)
		assert.Nil(t, other, "Reserve of another type holds nothing")
		b, err := subproc.ReserveEither(p, !first)
		require.NoError(t, err)
		require.NotNil(t, b, "joins the other type's placeholder")
		assert.Equal(t, first, b.Dir)
		assert.Equal(t, !first, b.FIFO)
		subproc.ReleaseAll(a)
		assert.Equal(t, want, typeOf(p), "still held by the second")
		subproc.ReleaseAll(b)
		_, err = os.Lstat(p)
		assert.True(t, os.IsNotExist(err), "the last release removes it")
	}
	for _, real := range []bool{true, false} {
		p := filepath.Join(dir, "real"+strconv.FormatBool(real))
		if real {
			require.NoError(t, os.Mkdir(p, 0o755))
			require.NoError(t, os.Chmod(p, 0o555))
		} else {
			require.NoError(t, os.WriteFile(p, nil, 0o444))
		}
		for _, prefer := range []bool{true, false} {
			r, err := subproc.ReserveEither(p, prefer)
			require.NoError(t, err)
			assert.Nil(t, r, "a user's empty one is real")
		}
		assert.Equal(t, real, typeOf(p).IsDir())
	}
}

// TestEitherReservedTogether: two commands that choose different kinds
// for the same name (an ancestor's repository came or went between their
// starts) and reserve it at the same moment both hold it, whichever kind
// won; the later release removes it. A command that held nothing would
// run with the name free: the first release removes the placeholder from
// under it.
func TestEitherReservedTogether(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), ".git")
	for i := range 1000 {
		var a, b *subproc.Reservation
		var errA, errB error
		var wg sync.WaitGroup
		wg.Go(func() { a, errA = subproc.ReserveEither(p, true) })
		wg.Go(func() { b, errB = subproc.ReserveEither(p, false) })
		wg.Wait()
		require.NoError(t, errA)
		require.NoError(t, errB)
		require.NotNil(t, a, "round %d: the directory's reservation holds nothing", i)
		require.NotNil(t, b, "round %d: the pipe's reservation holds nothing", i)
		require.Equal(t, a.Dir, b.Dir, "round %d", i)
		subproc.ReleaseAll(a)
		_, err := os.Lstat(p)
		require.NoError(t, err, "round %d: the first release removed the other's placeholder", i)
		subproc.ReleaseAll(b)
		_, err = os.Lstat(p)
		require.True(t, os.IsNotExist(err), "round %d: the placeholder outlived both releases", i)
	}
}

// reserveAsEnv names, in the test binary's environment, a path that
// TestMain reserves with ReserveEither (a pipe preferred) instead of
// running the tests, printing what it got: TestOtherUsersPipe runs it as
// another user.
const reserveAsEnv = "SUBPROC_TEST_RESERVE_EITHER"

// reserveAs is that run: it prints "held", "nothing" or the error, and
// exits 0.
func reserveAs(p string) int {
	fmt.Println(captureReserve(p))
	return 0
}

// TestOtherUsersPipe (the review's input): a root server's command held
// the workspace's `.git` by a pipe of mode 0400, which the user's own
// server could not open to join; it took it for something real, held
// nothing, and its command renamed the pipe away and made a `.git` with a
// core.fsmonitor. A pipe placeholder of another user refuses the
// reservation (the command is not run) and stays as it was.
func TestOtherUsersPipe(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the placeholder of one user and a reservation as another")
	}
	base := t.TempDir()
	for _, d := range []string{base, filepath.Dir(base)} {
		require.NoError(t, os.Chmod(d, 0o755)) // t.TempDir's are 0700
	}
	dir := filepath.Join(base, "ws")
	require.NoError(t, os.Mkdir(dir, 0o777))
	require.NoError(t, os.Chmod(dir, 0o777))
	// The test binary, where the other user can run it.
	bin := filepath.Join(base, "subproc.test")
	b, err := os.ReadFile(self(t))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, b, 0o755))
	p := filepath.Join(dir, ".git")
	r, err := subproc.ReserveEither(p, false)
	require.NoError(t, err)
	require.NotNil(t, r)
	defer subproc.ReleaseAll(r)
	cmd := exec.Command(bin)
	cmd.Env = []string{reserveAsEnv + "=" + p}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "error: ", "another user's pipe was taken for something real")
	assert.Contains(t, string(out), "the placeholder of a command of uid 0")
	st, err := os.Lstat(p)
	require.NoError(t, err)
	assert.Equal(t, os.ModeNamedPipe|0o400, st.Mode())
}

// TestUnwritableRootRefuses (the review's input): a command that took the
// write bit off its own workspace root (`chmod 555 .`) kept the next
// command from making the root's `.git` placeholder, which then held
// nothing; that command could `chmod 755 . && git init` while it ran. A
// placeholder that cannot be made in a directory of the server's own user
// refuses the reservation; one already there is joined without writing.
func TestUnwritableRootRefuses(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	require.NoError(t, os.Mkdir(dir, 0o755))
	p := filepath.Join(dir, ".git")
	held, err := subproc.ReserveEither(p, false)
	require.NoError(t, err)
	require.NotNil(t, held)
	run := func() string {
		if os.Geteuid() != 0 {
			return strings.TrimSpace(captureReserve(p))
		}
		// As root: the server's user is the directory's owner, uid 65534.
		for _, d := range []string{base, filepath.Dir(base)} {
			require.NoError(t, os.Chmod(d, 0o755))
		}
		require.NoError(t, os.Chown(dir, 65534, 65534))
		bin := filepath.Join(base, "subproc.test")
		b, err := os.ReadFile(self(t))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(bin, b, 0o755))
		cmd := exec.Command(bin)
		cmd.Env = []string{reserveAsEnv + "=" + p}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out))
	}
	if os.Geteuid() == 0 {
		// Root's pipe: give it to the directory's owner, as that user's.
		subproc.ReleaseAll(held)
		require.NoError(t, os.Chown(dir, 65534, 65534))
	}
	require.NoError(t, os.Chmod(dir, 0o555))
	t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
	if os.Geteuid() != 0 {
		assert.Equal(t, "held", run(), "a placeholder there is joined without writing")
		require.NoError(t, os.Chmod(dir, 0o755))
		subproc.ReleaseAll(held) // removed: its directory is writable again
		require.NoError(t, os.Chmod(dir, 0o555))
	}
	got := run()
	assert.Contains(t, got, "error: ", "a command could make the root writable again")
	assert.Contains(t, got, "chmod u+wx")
	_, err = os.Lstat(p)
	assert.True(t, os.IsNotExist(err), "nothing made")
}

// captureReserve is reserveAs in this process, returning what it prints.
func captureReserve(p string) string {
	r, err := subproc.ReserveEither(p, false)
	switch {
	case err != nil:
		return "error: " + err.Error()
	case r == nil:
		return "nothing"
	}
	subproc.ReleaseAll(r)
	return "held"
}

// TestReserveReleasedTogether: two commands that end at the same moment
// leave no placeholder behind (each used to see the other's shared lock,
// and neither removed it: placeholders were found on disk after the
// commands of a loaded CI run had ended), a directory's or a named pipe's.
func TestReserveReleasedTogether(t *testing.T) {
	for _, c := range []struct {
		name    string
		reserve func(string) (*subproc.Reservation, error)
	}{
		{".mcp.json", func(p string) (*subproc.Reservation, error) { return subproc.Reserve(p, true) }},
		{".git", func(p string) (*subproc.Reservation, error) { return subproc.ReserveEither(p, false) }},
	} {
		p := filepath.Join(t.TempDir(), c.name)
		for i := range 200 {
			a, err := c.reserve(p)
			require.NoError(t, err)
			b, err := c.reserve(p)
			require.NoError(t, err)
			require.NotNil(t, a)
			require.NotNil(t, b)
			var wg sync.WaitGroup
			wg.Go(func() { subproc.ReleaseAll(a) })
			wg.Go(func() { subproc.ReleaseAll(b) })
			wg.Wait()
			_, err = os.Lstat(p)
			require.True(t, os.IsNotExist(err), "%s, round %d: the placeholder outlived both releases", c.name, i)
		}
	}
}

// TestReleaseBesideForks: a child this process forks holds a copy of every
// descriptor from its fork until its exec closes the close-on-exec ones,
// the reservation's shared lock among them. Reservations released while
// other goroutines start programs without pause (as the server starts
// bubblewrap, git and probes for other calls) leave no placeholder behind;
// one left stays in the user's tree for good.
func TestReleaseBesideForks(t *testing.T) {
	dir := t.TempDir()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = exec.Command("/bin/true").Run()
			}
		})
	}
	var paths []string
	for i := range 400 {
		p := filepath.Join(dir, ".bash_logout-"+strconv.Itoa(i))
		r, err := subproc.Reserve(p, true)
		require.NoError(t, err)
		require.NotNil(t, r)
		subproc.ReleaseAll(r)
		paths = append(paths, p)
	}
	close(stop)
	wg.Wait()
	// A lock a child still held after the release's first tries is
	// tried on in the background (at load 13 a child's exec came later).
	subproc.WaitLateReleases()
	left := 0
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			left++
		}
	}
	assert.Zero(t, left, "placeholders left behind by a release that met a forked child's copy of its lock")
}

// TestFilledPlaceholderAdopted (issue 34): a directory placeholder someone
// filled while it was held (root's write tool or root on the host writing
// `.config/x` into a reserved `.config`; the test lifts the mode as root's
// access would) is not removed at the release but made an ordinary
// directory: mode 0755, unmarked, its content kept; the next reservation
// takes it for something real.
func TestFilledPlaceholderAdopted(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".config")
	r, err := subproc.Reserve(p, true)
	require.NoError(t, err)
	require.NotNil(t, r)
	require.NoError(t, os.Chmod(p, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(p, "x"), []byte("hi\n"), 0o644))
	require.NoError(t, os.Chmod(p, 0o555))
	subproc.ReleaseAll(r)
	st, err := os.Lstat(p)
	require.NoError(t, err, "the filled directory is kept")
	assert.Equal(t, os.ModeDir|0o755, st.Mode())
	b, err := os.ReadFile(filepath.Join(p, "x"))
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(b))
	_, err = unix.Getxattr(p, "user.harness.placeholder", make([]byte, 8))
	assert.ErrorIs(t, err, unix.ENODATA, "the mark is gone")
	again, err := subproc.Reserve(p, true)
	require.NoError(t, err)
	assert.Nil(t, again, "an ordinary directory now")
}

// TestReleaseTriesOnInTheBackground: a placeholder whose lock is still
// held past the release's first tries (a child forked before the release,
// slow to reach its exec under load; here a hold of the test's own, let go
// 60 ms later) is removed once it is free, after ReleaseAll returned, and
// one still held at the end is left to its holder, not removed under it.
func TestReleaseTriesOnInTheBackground(t *testing.T) {
	dir := t.TempDir()
	hold := func(p string) *os.File {
		f, err := os.Open(p)
		require.NoError(t, err)
		require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_SH))
		return f
	}
	freed, kept := filepath.Join(dir, ".vscode"), filepath.Join(dir, ".idea")
	rf, err := subproc.Reserve(freed, true)
	require.NoError(t, err)
	rk, err := subproc.Reserve(kept, true)
	require.NoError(t, err)
	hf, hk := hold(freed), hold(kept)
	defer func() { _ = hk.Close() }()
	subproc.ReleaseAll(rf, rk)
	_, err = os.Lstat(freed)
	require.NoError(t, err, "still held when ReleaseAll returned")
	time.Sleep(60 * time.Millisecond)
	require.NoError(t, hf.Close())
	subproc.WaitLateReleases()
	assert.NoDirExists(t, freed, "removed once its lock was free")
	assert.DirExists(t, kept, "left to its holder")
}
