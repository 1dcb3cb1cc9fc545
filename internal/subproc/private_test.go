//go:build linux

package subproc_test

import (
	"bytes"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/subproc"
)

// privateProbe is the command of TestBwrapViewStaysPrivate: it prints every
// process's command line and environment, every descriptor of its shell and
// of the sandbox's init with the contents of those that are files, then,
// after a separator, its mount table. It names none of the test's markers.
const privateProbe = `for p in /proc/[0-9]*; do
  printf 'CMDLINE %s: ' "$p"; tr '\0' ' ' < "$p/cmdline" 2>&1; echo
  printf 'ENVIRON %s: ' "$p"; tr '\0' ' ' < "$p/environ" 2>&1; echo
done
printf 'INIT '; tr '\0' ' ' < /proc/1/cmdline; echo
for f in /proc/$$/fd/* /proc/1/fd/*; do
  l=$(readlink "$f" 2>&1); echo "FD $f -> $l"
  case "$l" in pipe:*|socket:*|anon_inode:*|/dev/*) ;; *) tr '\0' ' ' < "$f" 2>&1; echo ;; esac
done
ls /proc/1/fd 2>&1
dd if=/proc/1/mem bs=1 count=1 2>&1 >/dev/null
echo '==MOUNTS''=='
cat /proc/self/mountinfo`

// TestBwrapViewStaysPrivate (issue 34): what bubblewrap sets the view up
// from (the writable roots, the pinned directories, the deny-read masks)
// is in no process's command line or environment that a command can read,
// nor in any descriptor it holds or can see on the sandbox's init: bwrap
// reads its arguments from a descriptor it closes once read. From the host,
// bwrap's own command line, its init's and the inner stage's (caught
// before it has its spec) name only descriptors. The mount table still
// lists the masks and binds: they are mounts.
func TestBwrapViewStaysPrivate(t *testing.T) {
	requireLandlock(t)
	own := sandbox(t)
	joined := own
	joined.Net = netNS(t, own)
	for _, c := range []struct {
		name  string
		b     subproc.Bwrap
		argv0 string
	}{{"own network namespace", own, "bwrap"}, {"the session's network namespace", joined, "/proc/self/fd/7"}} {
		t.Run(c.name, func(t *testing.T) {
			rootMark, maskMark, dirMark := "root"+rand.Text(), "keys"+rand.Text(), "vault"+rand.Text()
			base, err := filepath.EvalSymlinks(t.TempDir())
			require.NoError(t, err)
			root := filepath.Join(base, rootMark)
			secret := filepath.Join(root, maskMark, ".env")
			vault := filepath.Join(base, dirMark)
			require.NoError(t, os.MkdirAll(filepath.Dir(secret), 0o700))
			require.NoError(t, os.WriteFile(secret, []byte("SECRET"), 0o600))
			require.NoError(t, os.Mkdir(vault, 0o700))
			marks := []string{rootMark, maskMark, dirMark}

			var host hostView
			out, err := subproc.RunBwrap(t.Context(), c.b, subproc.Spec{
				Command: privateProbe, Dir: "/", Env: []string{"PATH=/usr/bin:/bin"},
				Confine: &subproc.Confinement{
					WritableRoots: []string{root},
					Masked:        []subproc.Masked{{Path: secret}, {Path: vault, Dir: true}},
				},
			}, time.Minute, 1<<20, func(pid int) error { host = readHostView(pid); return nil }, subproc.Watch{})
			require.NoError(t, err)
			stdout, stderr := out.Stdout.String(), out.Stderr.String()
			require.True(t, out.Status.Started, out.Status.Error+stderr)
			t.Log(stdout, stderr)
			inside, mounts, ok := strings.Cut(stdout, "==MOUNTS==")
			require.True(t, ok, stdout)

			want := []string{c.argv0, "--args", "12", "--", "/proc/self/fd/6", subproc.HelperArg, "stage"}
			assert.Contains(t, inside, "INIT "+strings.Join(want, " ")+" \n", "the sandbox's init is bwrap, its argv names only descriptors")
			assert.Contains(t, inside, "CMDLINE /proc/1: ", "the init's command line was read")
			for _, m := range marks {
				assert.NotContains(t, inside+stderr, m, "a command reads what its view is made of")
			}
			assert.NotContains(t, inside, "memfd:", "a descriptor of bwrap's arguments reached the command")
			// The shell's descriptors: 0, 1, 2 and the one its glob read
			// /proc/$$/fd through.
			for _, m := range regexp.MustCompile(`FD /proc/([0-9]+)/fd/([0-9]+) ->`).FindAllStringSubmatch(inside, -1) {
				if n, _ := strconv.Atoi(m[2]); m[1] != "1" {
					assert.LessOrEqual(t, n, 3, "the shell holds descriptor %s", m[0])
				}
			}
			assert.Contains(t, inside, "dd: failed to open '/proc/1/mem': Permission denied", "the init's memory is not the command's to read")
			assert.Contains(t, stderr, "cannot open /proc/1/environ: Permission denied", "nor its environment")

			assert.Equal(t, want, host.bwrap, "bwrap's command line, from the host")
			assert.Equal(t, want, host.init, "its init's")
			assert.Equal(t, []string{"/proc/self/fd/6", subproc.HelperArg, "stage"}, host.stage, "the stage's, before it reads its spec")
			// Nothing of the view or the command: only the stage's
			// collector setting (off: stage.go) and the PWD bwrap sets.
			assert.Equal(t, "GOGC=off\x00", string(host.bwrapEnv), "bwrap's environment")
			assert.Equal(t, "GOGC=off\x00", string(host.initEnv), "its init's")
			assert.Equal(t, "GOGC=off\x00PWD=/\x00", string(host.stageEnv), "the stage's (it starts in /)")

			// What remains: the mount table lists every mount point,
			// masks and binds included.
			for _, m := range marks {
				assert.Contains(t, mounts, m, "the mount table lists the view's mounts")
			}
		})
	}
}

// hostView is what the host sees of a sandbox's processes while the stage
// waits for its spec: the command lines and environments of bwrap (the
// init's parent), the init, and the stage (the init's child).
type hostView struct {
	bwrap, init, stage          []string
	bwrapEnv, initEnv, stageEnv []byte
}

// readHostView reads the host's view of the sandbox whose init is pid,
// waiting up to 10 s for the init's child to be the stage.
func readHostView(pid int) hostView {
	var v hostView
	v.init, v.initEnv = procArgs(pid)
	v.bwrap, v.bwrapEnv = procArgs(parentOf(pid))
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, child := range childrenOf(pid) {
			if argv, env := procArgs(child); len(argv) > 1 && argv[1] == subproc.HelperArg {
				v.stage, v.stageEnv = argv, env
				return v
			}
		}
	}
	return v
}

// procArgs returns pid's command line and environment.
func procArgs(pid int) ([]string, []byte) {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	cmdline, _ := os.ReadFile(dir + "cmdline")
	env, err := os.ReadFile(dir + "environ")
	if err != nil {
		env = []byte("unreadable: " + err.Error())
	}
	return strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00"), env
}

// parentOf returns pid's parent, 0 when it cannot be read.
func parentOf(pid int) int {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// pid (comm) STATE PPID ...: comm may hold spaces and parentheses.
	fields := bytes.Fields(stat[bytes.LastIndexByte(stat, ')')+1:])
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(string(fields[1]))
	return ppid
}

// childrenOf returns the pids whose parent is pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if p, err := strconv.Atoi(e.Name()); err == nil && parentOf(p) == pid {
			out = append(out, p)
		}
	}
	return out
}

// TestBwrapArgv: bwrap's command line, and nsenter's around it, name only
// descriptors and fixed words; the options are in the arguments file, each
// followed by a NUL, read from its start, sealed; an argument holding a NUL
// is refused.
func TestBwrapArgv(t *testing.T) {
	stage := []string{"--", "/proc/self/fd/6", subproc.HelperArg, "stage"}
	assert.Equal(t, append([]string{"bwrap", "--args", "12"}, stage...), subproc.BwrapArgv("bwrap"))
	assert.Equal(t, append([]string{
		"nsenter", "--user=/proc/self/fd/9", "--net=/proc/self/fd/10", "--preserve-credentials", "--",
		"/proc/self/fd/7", "--args", "12",
	}, stage...), subproc.EnterArgs(subproc.BwrapArgv("/proc/self/fd/7")...))

	f, err := subproc.ArgsFile([]string{"--bind-try", "/w s", "/w s", ""})
	require.NoError(t, err)
	defer f.Close() //nolint:errcheck // test file
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	assert.Equal(t, "--bind-try\x00/w s\x00/w s\x00\x00", string(b))
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	require.NoError(t, err)
	assert.Equal(t, unix.F_SEAL_FUTURE_WRITE|unix.F_SEAL_GROW|unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL, seals&^unix.F_SEAL_EXEC)
	_, err = f.WriteAt([]byte("--bind"), 0)
	require.Error(t, err, "sealed against writes")
	again, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), os.O_RDWR, 0)
	require.NoError(t, err)
	defer again.Close() //nolint:errcheck // test file
	_, err = again.WriteAt([]byte("--bind"), 0)
	require.Error(t, err, "sealed against writes through another opening")

	_, err = subproc.ArgsFile([]string{"--ro-bind-try", "/a\x00--bind\x00/\x00/"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NUL")
}
