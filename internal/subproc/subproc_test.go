//go:build linux

package subproc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/subproc"
)

func TestMain(m *testing.M) {
	if subproc.IsHelper(os.Args) {
		os.Exit(subproc.Main())
	}
	if p := os.Getenv(reserveAsEnv); p != "" {
		os.Exit(reserveAs(p))
	}
	if dir := os.Getenv(janitorServerEnv); dir != "" {
		os.Exit(janitorServer(dir))
	}
	os.Exit(m.Run())
}

// self is the test binary, which serves as the helper.
func self(t testing.TB) string {
	t.Helper()
	p, err := os.Executable()
	require.NoError(t, err)
	return p
}

func requireLandlock(t testing.TB) {
	t.Helper()
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
}

func run(ctx context.Context, t *testing.T, spec subproc.Spec) (subproc.Outcome, string, string) {
	t.Helper()
	if spec.Env == nil {
		spec.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	}
	out, err := subproc.Run(ctx, helperProgram(t), spec, 0, 1<<20, subproc.Watch{})
	require.NoError(t, err)
	return out, out.Stdout.String(), out.Stderr.String()
}

func TestRunExitCodeOutputAndEnv(t *testing.T) {
	dir := t.TempDir()
	out, stdout, stderr := run(t.Context(), t, subproc.Spec{
		Command: `echo "$GREETING in $PWD"; echo oops >&2; exit 3`,
		Dir:     dir, Env: []string{"GREETING=hello"},
	})
	assert.True(t, out.Status.Started)
	assert.Equal(t, 3, out.Status.ExitCode)
	assert.Equal(t, "hello in "+dir+"\n", stdout)
	assert.Equal(t, "oops\n", stderr)
}

func TestRunSignalled(t *testing.T) {
	out, _, _ := run(t.Context(), t, subproc.Spec{Command: `kill -TERM $$`, Dir: t.TempDir()})
	assert.Equal(t, -1, out.Status.ExitCode)
	assert.Equal(t, "SIGTERM", out.Status.Signal)
}

func TestRunMissingWorkdirDoesNotStart(t *testing.T) {
	out, _, _ := run(t.Context(), t, subproc.Spec{Command: `true`, Dir: filepath.Join(t.TempDir(), "missing")})
	assert.False(t, out.Status.Started)
	assert.Contains(t, out.Status.Error, "missing")
}

// alive reports whether pid names a live, non-zombie process.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}

func TestCancelKillsTheTreeIncludingSetsid(t *testing.T) {
	for _, confine := range []*subproc.Confinement{nil, {}} {
		t.Run(fmt.Sprintf("confined=%v", confine != nil), func(t *testing.T) {
			if confine != nil {
				requireLandlock(t)
			}
			dir := t.TempDir()
			if confine != nil {
				confine.WritableRoots = []string{dir}
			}
			pids := filepath.Join(dir, "pids")
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go func() {
				// Cancel once both sleepers have written their pid.
				for ctx.Err() == nil {
					if b, _ := os.ReadFile(pids); strings.Count(string(b), "\n") >= 2 {
						cancel()
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
			}()
			start := time.Now()
			out, _, _ := run(ctx, t, subproc.Spec{
				Command: `setsid sh -c 'echo $$ >> pids; exec sleep 300' & sh -c 'echo $$ >> pids; exec sleep 300' & wait`,
				Dir:     dir, Confine: confine,
			})
			assert.Less(t, time.Since(start), 60*time.Second)
			assert.True(t, out.Status.Stopped)
			assert.True(t, out.Cancelled)
			assert.Zero(t, out.Status.Survivors)
			b, err := os.ReadFile(pids)
			require.NoError(t, err)
			fields := strings.Fields(string(b))
			require.Len(t, fields, 2)
			for _, f := range fields {
				pid, err := strconv.Atoi(f)
				require.NoError(t, err)
				assert.False(t, alive(pid), "pid %d survived the cancellation", pid)
			}
		})
	}
}

// TestStopBeforeTheHelperIsReady: a stop that reaches the helper at once,
// most likely before it can catch it, is a run with no error that reports
// what happened: nothing started (a stopped, cancelled run, exit code -1,
// no file), or, when the helper outran the stop on a loaded machine (the
// CI run of 2176bdb), the command ran to its end (exit code 0, its file
// made).
func TestStopBeforeTheHelperIsReady(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	out, err := subproc.Run(ctx, helperProgram(t), subproc.Spec{Command: "echo x > made", Dir: dir}, 0, 100, subproc.Watch{})
	require.NoError(t, err)
	made, err := os.ReadFile(filepath.Join(dir, "made"))
	switch out.Status.ExitCode {
	case -1:
		assert.True(t, out.Status.Stopped)
		assert.True(t, out.Cancelled)
		assert.True(t, os.IsNotExist(err), "nothing started, yet the file is there")
	case 0:
		// The command's end and the stop met: either may be what the
		// run saw first (make test at load 13-18: not stopped, not
		// cancelled, the command ended on its own).
		require.NoError(t, err, "the command ran to its end, yet made nothing")
		assert.Equal(t, "x\n", string(made))
	default:
		t.Errorf("exit code %d: neither nothing started (-1) nor the command's own end (0)", out.Status.ExitCode)
	}
}

func TestBackgroundProcessesDoNotOutliveTheCommand(t *testing.T) {
	dir := t.TempDir()
	out, _, _ := run(t.Context(), t, subproc.Spec{
		Command: `setsid sh -c 'exec sleep 300' >/dev/null 2>&1 & echo $! > pid`, Dir: dir,
	})
	assert.Equal(t, 0, out.Status.ExitCode)
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	assert.False(t, alive(pid))
}

func TestConfinedWritesLandOnlyBeneathWritableRoots(t *testing.T) {
	requireLandlock(t)
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	require.NoError(t, os.Mkdir(root, 0o755))
	require.NoError(t, os.Mkdir(outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "keep"), []byte("old"), 0o644))

	cases := []struct {
		name    string
		roots   []string
		command string
		lands   string // path that must exist after, "" for none
		absent  string // path that must not exist after
		denied  bool
	}{
		{"create beneath a root lands", []string{root}, "echo x > " + root + "/a", root + "/a", "", false},
		{"create outside is denied", []string{root}, "echo x > " + outside + "/a", "", outside + "/a", true},
		{"mkdir outside is denied", []string{root}, "mkdir " + outside + "/d", "", outside + "/d", true},
		{"read-only allows nothing", nil, "echo x > " + root + "/b", "", root + "/b", true},
		{"/dev/null is writable in read-only", nil, "echo x > /dev/null", "", "", false},
		{"a symlink inside pointing out is denied", []string{root}, "ln -s " + outside + " " + root + "/l && echo x > " + root + "/l/c", "", outside + "/c", true},
		{"rename out of a root is denied", []string{root}, "echo x > " + root + "/m && mv " + root + "/m " + outside + "/m", "", outside + "/m", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, _, stderr := run(t.Context(), t, subproc.Spec{
				Command: c.command, Dir: base, Confine: &subproc.Confinement{WritableRoots: c.roots},
			})
			require.True(t, out.Status.Started, out.Status.Error)
			if c.denied {
				assert.NotEqual(t, 0, out.Status.ExitCode)
				assert.Regexp(t, `Permission denied|Operation not permitted`, stderr)
			} else {
				assert.Equal(t, 0, out.Status.ExitCode, stderr)
			}
			if c.lands != "" {
				assert.FileExists(t, c.lands)
			}
			if c.absent != "" {
				assert.NoFileExists(t, c.absent)
			}
		})
	}
	b, err := os.ReadFile(filepath.Join(outside, "keep"))
	require.NoError(t, err)
	assert.Equal(t, "old", string(b))
}

// listenUnix listens on a pathname Unix socket at path and counts accepted
// connections.
func listenUnix(t *testing.T, path string) *int32 {
	t.Helper()
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	var n int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n++
			_ = c.Close()
		}
	}()
	return &n
}

func TestConfinedSockets(t *testing.T) {
	requireLandlock(t)
	py, err := findPython()
	if err != nil {
		t.Skip("no python3 to open sockets with")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "outside.sock")
	listenUnix(t, sock)
	connectUnix := py + ` -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' ` + sock
	tcp := py + ` -c 'import socket; socket.socket(socket.AF_INET)'`
	cases := []struct {
		name    string
		confine subproc.Confinement
		command string
		ok      bool
	}{
		{"unix connect outside refused by default", subproc.Confinement{}, connectUnix, false},
		{"unix connect allowed with unix sockets", subproc.Confinement{UnixSockets: true}, connectUnix, true},
		{"inet socket refused by default", subproc.Confinement{}, tcp, false},
		{"inet socket allowed with network", subproc.Confinement{Network: true}, tcp, true},
		{"inet socket refused with only unix sockets", subproc.Confinement{UnixSockets: true}, tcp, false},
		{"unix refused with only network", subproc.Confinement{Network: true}, connectUnix, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, _, stderr := run(t.Context(), t, subproc.Spec{Command: c.command, Dir: dir, Confine: &c.confine})
			require.True(t, out.Status.Started, out.Status.Error)
			if c.ok {
				assert.Equal(t, 0, out.Status.ExitCode, stderr)
			} else {
				assert.NotEqual(t, 0, out.Status.ExitCode)
				assert.Contains(t, stderr, "Operation not permitted")
			}
		})
	}
}

// findPython returns an absolute python3 interpreter (not a shim that
// needs the caller's environment).
func findPython() (string, error) {
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3"} {
		if err := unix.Access(p, unix.X_OK); err == nil {
			return p, nil
		}
	}
	return "", errors.New("none")
}

func TestCaptureKeepsHeadAndTail(t *testing.T) {
	c := subproc.NewCapture(10)
	_, _ = c.Write([]byte("abc"))
	assert.Equal(t, "abc", c.String())
	assert.False(t, c.Truncated())
	_, _ = c.Write([]byte("defgh"))
	_, _ = c.Write([]byte("ijklmnopqrstuvwxyz"))
	assert.True(t, c.Truncated())
	assert.Equal(t, int64(26), c.Total())
	assert.Equal(t, "abcde\n[... 16 bytes cut ...]\nvwxyz", c.String())
	c2 := subproc.NewCapture(10)
	for _, b := range []byte("0123456789ABCDEF") {
		_, _ = c2.Write([]byte{b})
	}
	assert.Equal(t, "01234\n[... 6 bytes cut ...]\nBCDEF", c2.String())
}

// helperProgram is the test binary opened as the helper program.
func helperProgram(t testing.TB) *subproc.Program {
	t.Helper()
	p, err := subproc.OpenProgram(self(t))
	require.NoError(t, err)
	return p
}
