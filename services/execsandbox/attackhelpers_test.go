//go:build linux

package execsandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// ordinaryUID is the user a root server's workspace is given to (the
// cloudsdk user of the test hosts).
const ordinaryUID = 1000

// owner is who owns a world's directories: a root server runs commands as
// the workspace owner.
type owner struct {
	name string
	uid  int
}

// owners are the workspace owners a test runs under: as root, an ordinary
// user's workspace and a root-owned one; otherwise the test's own user.
func owners() []owner {
	if os.Geteuid() == 0 {
		return []owner{{"owned by uid 1000", ordinaryUID}, {"owned by root", 0}}
	}
	return []owner{{"owned by the server's user", os.Geteuid()}}
}

// primaryOwner is the first of owners: the ordinary user a root server
// serves, or the test's own user.
func primaryOwner() owner { return owners()[0] }

// world is a fixture whose directories belong to an owner, and a runner
// for it, and the session its commands run in (so they share one network
// namespace, as the commands of an MCP connection do).
type world struct {
	fixture
	pol  *sandboxpolicy.Service
	r    *execsandbox.Runner
	uid  int
	sess *session.Session
}

// newWorld makes a fixture, runs setup (as the test's user) to fill it,
// gives the fixture's directories to o, and returns it with a runner built
// from run (exec.Config). It skips when the sandbox cannot run here.
func newWorld(t *testing.T, o owner, run exec.Config, setup func(f fixture)) world {
	t.Helper()
	return newWorldWith(t, o, run, nil, setup)
}

// newWorldWith is newWorld whose policy configuration edit changes first
// (nil: none).
func newWorldWith(t *testing.T, o owner, run exec.Config, edit func(*sandboxpolicy.Config), setup func(f fixture)) world {
	t.Helper()
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
	f, pol := newFixtureWith(t, edit)
	r, err := execsandbox.New(execsandbox.Config{}, run, pol)
	require.NoError(t, err)
	tracker := session.NewTracker()
	w := world{fixture: f, pol: pol, r: r, uid: o.uid, sess: tracker.Start("world", f.ws)}
	t.Cleanup(func() { tracker.End(w.sess) })
	// Whether the sandbox runs here, before setup plants anything.
	_, err = w.try(t.Context(), sandbox.WorkspaceWrite, "true", time.Minute)
	var ee *exec.Error
	if errors.As(err, &ee) && ee.Code == exec.CodeUnavailable {
		t.Skip("bubblewrap cannot run here: " + ee.Message)
	}
	require.NoError(t, err)
	if setup != nil {
		setup(f)
	}
	if os.Geteuid() == 0 && o.uid != 0 {
		// The owner must reach the fixture: t.TempDir's directories are
		// 0700.
		for d := filepath.Dir(f.ws); d != "/" && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
			require.NoError(t, os.Chmod(d, 0o755))
		}
		for _, d := range []string{f.ws, f.cache, f.outside} {
			require.NoError(t, chownTree(d, o.uid))
		}
	}
	return w
}

// chownTo gives p (not following a symlink) to uid: as root, with the
// group of the same number (the test hosts' users have their own group);
// otherwise the test's own user keeps p's group, which may have any number.
func chownTo(p string, uid int) error {
	gid := uid
	if os.Geteuid() != 0 {
		gid = -1
	}
	return os.Lchown(p, uid, gid)
}

func chownTree(root string, uid int) error {
	return filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return chownTo(p, uid)
	})
}

// try runs command in the workspace under mode, in the world's session.
func (w world) try(ctx context.Context, mode sandbox.Mode, command string, timeout time.Duration) (exec.Result, error) {
	return w.r.Run(session.NewContext(ctx, w.sess), exec.Request{
		Command: command, Workdir: w.ws, Timeout: timeout,
		Policy: carried(w.pol, mode, w.ws),
	})
}

// run is try that requires the command to have run, with a minute's
// timeout.
func (w world) run(t *testing.T, mode sandbox.Mode, command string) exec.Result {
	t.Helper()
	res, err := w.try(t.Context(), mode, command, time.Minute)
	require.NoError(t, err)
	return res
}

// unconfined runs command as a control: under danger-full-access with an
// empty deny-read set (no home, the `.env` defaults allowed), the one way
// a command still runs unconfined, as the server's user.
func (w world) unconfined(t *testing.T, command string) exec.Result {
	t.Helper()
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{WorkspaceRoot: w.ws, TempRoots: []string{}, Homes: []string{}, AllowRead: []string{".env", ".env.*"}})
	require.NoError(t, err)
	require.True(t, pol.DenyRead().Empty(), "%v", pol.DenyRead().Describe())
	r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
	require.NoError(t, err)
	res, err := r.Run(session.NewContext(t.Context(), w.sess), exec.Request{
		Command: command, Workdir: w.ws, Timeout: time.Minute, Policy: carried(pol, sandbox.DangerFullAccess, w.ws),
	})
	require.NoError(t, err)
	return res
}

// python3 is the system Python (not a per-user shim), or skips.
func python3(t *testing.T) string {
	t.Helper()
	const p = "/usr/bin/python3"
	if _, err := os.Stat(p); err != nil {
		t.Skip("python3 is not installed at " + p)
	}
	return p
}

// pyCommand runs script (a Python program) with the system Python.
func pyCommand(t *testing.T, script string) string {
	t.Helper()
	return python3(t) + " -c " + shellQuote(script)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// pySyscalls is a Python prelude: sc(name, nr, *args) makes a raw system
// call and prints "name OK" or "name FAIL errno".
const pySyscalls = `import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
def sc(name, nr, *args):
    r = libc.syscall(nr, *args)
    e = ctypes.get_errno()
    print(name, "OK" if r >= 0 else "FAIL " + errno.errorcode.get(e, str(e)))
`

// liveProcesses returns the pids of host processes (not zombies, not this
// one) whose command line contains marker.
func liveProcesses(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(marker)) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) STATE ...: comm may hold spaces and parentheses.
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// uniqueMarker is a string unique to this test run, for finding its
// processes.
func uniqueMarker() string {
	return fmt.Sprintf("%d%d", os.Getpid(), time.Now().UnixNano()%1_000_000)
}

// fileState is everything about a file a command might change without
// writing it: its lstat, its extended attributes, its inode flags and
// its bytes (not its access time, which reading it may change).
type fileState struct {
	Mode     fs.FileMode
	UID, GID uint32
	Mtime    unix.Timespec
	Xattrs   map[string]string
	Flags    uint32
	Content  string
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(path, &st))
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	s := fileState{Mode: fi.Mode(), UID: st.Uid, GID: st.Gid, Mtime: st.Mtim, Xattrs: map[string]string{}}
	buf := make([]byte, 64<<10)
	if n, err := unix.Llistxattr(path, buf); err == nil {
		for name := range strings.SplitSeq(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
			if name == "" {
				continue
			}
			v := make([]byte, 64<<10)
			m, err := unix.Lgetxattr(path, name, v)
			require.NoError(t, err)
			s.Xattrs[name] = string(v[:m])
		}
	}
	if fi.Mode().IsRegular() || fi.IsDir() {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		if fl, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS); err == nil {
			s.Flags = fl
		}
		require.NoError(t, unix.Close(fd))
	}
	if fi.Mode().IsRegular() {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		s.Content = string(b)
	}
	return s
}

// hasCommand reports whether name is on this host's PATH.
func hasCommand(name string) bool {
	_, err := osexec.LookPath(name)
	return err == nil
}

// runHost runs a program on the host, for cleanups.
func runHost(name string, args ...string) error { return osexec.Command(name, args...).Run() }

// writeTree writes files (path relative to root: content; a path ending in
// "/" is a directory).
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if strings.HasSuffix(name, "/") {
			require.NoError(t, os.MkdirAll(p, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
}

// readTree returns the content of each of names beneath root ("<missing>"
// when it cannot be read).
func readTree(root string, names []string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(root, n))
		if err != nil {
			out[n] = "<missing>"
			continue
		}
		out[n] = string(b)
	}
	return out
}

// carried is the policy of a call under mode with workspace root ws, with
// the roots pol pins on every policy (its temp and extra writable roots), as
// a resolved policy carries them.
func carried(pol *sandboxpolicy.Service, mode sandbox.Mode, ws string) *sandbox.ExecutionPolicy {
	p := pol.Default()
	p.Mode, p.WorkspaceRoot = mode, ws
	return &p
}

// exiting reports whether process pid is gone or on its way out: a
// zombie, or flagged PF_EXITING in /proc/<pid>/stat (its ninth field).
func exiting(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return true
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is the state (field 3), f[6] the flags (field 9).
	if len(f) < 7 || f[0] == "Z" || f[0] == "X" {
		return true
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	const pfExiting = 0x4
	return err != nil || flags&pfExiting != 0
}
