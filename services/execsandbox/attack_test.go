//go:build linux

package execsandbox_test

// Issue 22: each measured attack on the bubblewrap runner, checked by what
// changed on disk, what leaked and what survived; a failure is a hole. The
// tests are meant to pass as root (a root server runs commands as the
// workspace owner: an ordinary user's workspace and a root-owned one are
// both tried) and as an ordinary user:
//
//	go test -c -o /tmp/execsandbox.test ./services/execsandbox/
//	setpriv --reuid=1000 --regid=1000 --init-groups env -i HOME=/tmp \
//	    PATH=/usr/local/go/bin:/usr/bin:/bin /tmp/execsandbox.test -test.run Attack

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
)

// confinedModes are the modes that confine a command.
var confinedModes = []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite}

// TestAttackCommandUser: a root server runs a command as the workspace
// owner (what it creates belongs to that owner), and a command has no
// capability, whoever it runs as.
func TestAttackCommandUser(t *testing.T) {
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := newWorld(t, o, exec.Config{}, nil)
			res := w.run(t, sandbox.WorkspaceWrite, "id -u; touch made; grep '^Cap' /proc/self/status")
			require.EqualValues(t, 0, res.ExitCode, res.Stderr.Text)
			lines := strings.Split(strings.TrimSpace(res.Stdout.Text), "\n")
			require.NotEmpty(t, lines)
			assert.Equal(t, strconv.Itoa(o.uid), lines[0], "the command's uid")
			var st syscall.Stat_t
			require.NoError(t, syscall.Stat(filepath.Join(w.ws, "made"), &st))
			assert.Equal(t, uint32(o.uid), st.Uid, "the owner of a file the command made")
			caps := 0
			for _, l := range lines[1:] {
				name, val, ok := strings.Cut(l, ":")
				if !ok {
					continue
				}
				caps++
				assert.Equal(t, "0000000000000000", strings.TrimSpace(val), "%s of the command", name)
			}
			assert.Equal(t, 5, caps, "CapInh, CapPrm, CapEff, CapBnd and CapAmb: %s", res.Stdout.Text)
		})
	}
}

// TestAttackDeviceNodes (1): no device node can be made, in any writable
// root, by any route.
func TestAttackDeviceNodes(t *testing.T) {
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := newWorld(t, o, exec.Config{}, nil)
			cases := []struct{ name, command, path string }{
				{"mknod a block device in the workspace", "mknod sda b 8 0", filepath.Join(w.ws, "sda")},
				{"mknod a char device in the workspace", "mknod mem c 1 1", filepath.Join(w.ws, "mem")},
				{"os.mknod a block device in the extra root", pyCommand(t,
					"import os, stat\nos.mknod('"+w.cache+"/sdb', stat.S_IFBLK | 0o600, os.makedev(8, 0))"), filepath.Join(w.cache, "sdb")},
				{"mknod in a new user namespace", "unshare -r mknod sdc b 8 0", filepath.Join(w.ws, "sdc")},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					res := w.run(t, sandbox.WorkspaceWrite, c.command)
					assert.NotEqual(t, 0, res.ExitCode, "stdout %q", res.Stdout.Text)
					_, err := os.Lstat(c.path)
					assert.ErrorIs(t, err, fs.ErrNotExist, "%s was created (stderr %q)", c.path, res.Stderr.Text)
				})
			}
			for _, root := range []string{w.ws, w.cache} {
				require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
					require.NoError(t, err)
					assert.Zero(t, d.Type()&(fs.ModeDevice|fs.ModeCharDevice), "a device node at %s", p)
					return nil
				}))
			}
		})
	}
}

// gitTree is a workspace with a repository, a nested one, a .git file and
// the gitdir it points to: every file of it is protected.
var gitTree = map[string]string{
	".git/config":     "[core]\n\trepositoryformatversion = 0\n",
	".git/HEAD":       "ref: refs/heads/main\n",
	".git/hooks/":     "",
	"sub/.git/config": "[core]\n",
	"wt/.git":         "gitdir: ../mod/gitdir\n",
	"mod/gitdir/HEAD": "ref: refs/heads/main\n",
}

// gitFiles are gitTree's files, and the hook a command might plant.
var gitFiles = []string{".git/config", ".git/HEAD", ".git/hooks/pre-commit", "sub/.git/config", "wt/.git", "mod/gitdir/HEAD"}

const evilConfig = `printf '[core]\n\tfsmonitor = "id > /tmp/pwned"\n'`

// mountSyscalls (after pySyscalls) tries every system call that could
// reshape the view of .git, then writes .git/config (amd64 numbers): eight
// lines, each "name FAIL errno" when refused.
const mountSyscalls = `
import os
sc("mount remount rw", 165, None, b".git", None, 0x20 | 0x1000, None)
sc("umount2", 166, b".git", 2)
sc("open_tree clone", 428, -100, b".git", 1 | 0x8000)
attr = (ctypes.c_uint64 * 4)(0, 1, 0, 0)
sc("mount_setattr clear rdonly", 442, -100, b".git", 0x8000, ctypes.byref(attr), 32)
sc("fsopen", 430, b"tmpfs", 0)
fh = ctypes.create_string_buffer(8 + 128)
ctypes.memmove(fh, (128).to_bytes(4, "little"), 4)
sc("open_by_handle_at", 304, -100, fh, 0)
sc("unshare user+mount", 272, 0x10000000 | 0x20000)
try:
    open(".git/config", "a").write("[core]\n\tfsmonitor = evil\n")
    print("write OK")
except OSError as e:
    print("write FAIL", e.errno)
`

// TestAttackGitMount (2): the read-only `.git` cannot be undone (remount,
// unmount, the new mount API, file handles, renames): every file of every
// protected repository keeps its bytes on disk.
func TestAttackGitMount(t *testing.T) {
	longTest(t)
	cases := []struct{ name, command, py string }{
		{"mount -o remount,rw", "mount -o remount,rw .git; mount -o remount,bind,rw .git; " + evilConfig + " >> .git/config", ""},
		{"umount", "umount .git; umount -l .git; " + evilConfig + " >> .git/config", ""},
		{"mount(2), umount2(2), open_tree, mount_setattr, fsopen, open_by_handle_at, unshare", "", mountSyscalls},
		{"rename .git away and make another", "mv .git .git.old; mkdir -p .git; " + evilConfig + " > .git/config", ""},
		{"remove .git", "rm -rf .git; mkdir -p .git; " + evilConfig + " > .git/config", ""},
		{"replace .git/config by rename", evilConfig + " > c && mv -f c .git/config", ""},
		{"plant a hook", "printf '#!/bin/sh\\nid\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit", ""},
		{"a nested repository: rename its parent and plant another .git", "mv sub sub.old && mkdir -p sub/.git && " + evilConfig + " > sub/.git/config", ""},
		{"a .git file: rename its parent and plant another", "mv wt wt.old && mkdir wt && echo 'gitdir: /tmp/evil' > wt/.git", ""},
		{"the gitdir a .git file names: rename its parent and plant another", "mv mod mod.old && mkdir -p mod/gitdir && echo evil > mod/gitdir/HEAD", ""},
	}
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					w := newWorld(t, o, exec.Config{}, func(f fixture) { writeTree(t, f.ws, gitTree) })
					before := readTree(w.ws, gitFiles)
					command, syscalls := c.command, c.py != ""
					if syscalls {
						command = pyCommand(t, pySyscalls+c.py)
					}
					res := w.run(t, sandbox.WorkspaceWrite, command)
					out := res.Stdout.Text + res.Stderr.Text
					assert.Equal(t, before, readTree(w.ws, gitFiles), "protected files changed on disk; output: %s", out)
					if syscalls {
						if runtime.GOARCH != "amd64" {
							return
						}
						assert.NotContains(t, res.Stdout.Text, " OK", out)
						assert.Equal(t, 8, strings.Count(res.Stdout.Text, " FAIL"), out)
					}
				})
			}
		})
	}
}

// TestAttackProcEnviron (3): no process outside the sandbox has its
// environment read through /proc, the server's variables do not reach the
// command, and a command sees only its sandbox's processes.
//
// /proc/PID/environ shows a process's environment as it was at exec, so a
// variable the test sets (t.Setenv) is not there: a decoy host process
// started with the secret in its environment, as the command's user, stands
// for the server and its parent; the variable set with t.Setenv checks what
// the runner passes on.
func TestAttackProcEnviron(t *testing.T) {
	token := "tok" + uniqueMarker() + "secret"
	t.Setenv("SECRET_TOKEN", token)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := newWorld(t, o, exec.Config{}, nil)
			decoy := startDecoy(t, o, token)
			command := fmt.Sprintf(`for p in %d %d %d 1 2 self; do cat /proc/$p/environ; echo; done
cat /proc/[0-9]*/environ; echo; env; ls -d /proc/[0-9]*; echo PIDS=$(ls -d /proc/[0-9]* | wc -l)`, decoy, os.Getpid(), os.Getppid())
			// danger-full-access too: with deny-read it runs in a PID
			// namespace of its own (a host process's /proc/PID/root would
			// reach past the masks).
			for _, mode := range append(slices.Clone(confinedModes), sandbox.DangerFullAccess) {
				t.Run(string(mode), func(t *testing.T) {
					res := w.run(t, mode, command)
					assert.NotContains(t, res.Stdout.Text+res.Stderr.Text, token)
					_, n, ok := strings.Cut(res.Stdout.Text, "PIDS=")
					require.True(t, ok, res.Stdout.Text)
					pids, err := strconv.Atoi(strings.TrimSpace(n))
					require.NoError(t, err)
					assert.LessOrEqual(t, pids, 10, "processes seen by the command: %s", res.Stdout.Text)
				})
			}
			t.Run("control: unconfined, the decoy's environment is read", func(t *testing.T) {
				res := w.unconfined(t, fmt.Sprintf("cat /proc/%d/environ", decoy))
				assert.Contains(t, res.Stdout.Text, token)
			})
		})
	}
}

// startDecoy starts a sleeping host process as o's user with token in its
// environment, killed at the test's end, and returns its pid.
func startDecoy(t *testing.T, o owner, token string) int {
	t.Helper()
	cmd := osexec.Command("/bin/sleep", "300")
	cmd.Env = []string{"SECRET_TOKEN=" + token}
	if os.Geteuid() == 0 && o.uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(o.uid), Gid: uint32(o.uid), Groups: []uint32{}}}
	}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}

// TestAttackHostKernel (4): the host's name, the kernel log, perf and BPF
// are out of reach.
func TestAttackHostKernel(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the system call numbers below are amd64's")
	}
	host, err := os.Hostname()
	require.NoError(t, err)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := newWorld(t, o, exec.Config{}, nil)
			script := pySyscalls + `
sc("sethostname", 170, b"evil", 4)
sc("setdomainname", 171, b"evil", 4)
attr = (ctypes.c_uint8 * 128)()
attr[4] = 128  # perf_event_attr.size; type 0 (hardware), config 0 (cycles)
sc("perf_event_open system-wide", 298, attr, -1, 0, -1, 0)
sc("bpf map create", 321, 0, attr, 72)
buf = ctypes.create_string_buffer(1 << 16)
sc("syslog read all", 103, 3, buf, 1 << 16)
sc("syslog clear", 103, 5, None, 0)
`
			res := w.run(t, sandbox.WorkspaceWrite, "hostname evil-host; echo hostname=$?; "+pyCommand(t, script)+
				"; if command -v dmesg >/dev/null; then dmesg >/dev/null; echo dmesg=$?; else echo dmesg=absent; fi")
			out := res.Stdout.Text + res.Stderr.Text
			after, err := os.Hostname()
			require.NoError(t, err)
			assert.Equal(t, host, after, "the host's name")
			assert.NotContains(t, res.Stdout.Text, "hostname=0", out)
			assert.NotContains(t, res.Stdout.Text, " OK", out)
			assert.Equal(t, 6, strings.Count(res.Stdout.Text, " FAIL"), out)
			assert.NotContains(t, res.Stdout.Text, "dmesg=0", out)
		})
	}
}

// TestAttackMetadataOutside (5): in every confined mode, nothing about a
// file or directory outside the writable roots changes: mode, owner,
// times, extended attributes, inode flags.
func TestAttackMetadataOutside(t *testing.T) {
	longTest(t)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := newWorld(t, o, exec.Config{}, func(f fixture) {
				writeTree(t, f.outside, map[string]string{"target": "keep\n", "dir/": ""})
			})
			target, dir := filepath.Join(w.outside, "target"), filepath.Join(w.outside, "dir")
			t.Cleanup(func() {
				if os.Geteuid() == 0 && hasCommand("chattr") {
					// An attack that landed must not block the cleanup.
					_ = runHost("chattr", "-i", "-a", target, dir)
				}
			})
			t.Run("control: unconfined, chmod lands", func(t *testing.T) {
				control := filepath.Join(w.outside, "control")
				require.NoError(t, os.WriteFile(control, nil, 0o644))
				before := stateOf(t, control)
				w.unconfined(t, "chmod 600 "+control)
				assert.NotEqual(t, before, stateOf(t, control))
			})
			for _, mode := range confinedModes {
				t.Run(string(mode), func(t *testing.T) {
					cases := []struct{ name, command string }{
						{"chmod 777", "chmod 777 " + target + " " + dir},
						{"chmod u+s", "chmod u+s,g+s " + target},
						{"chown", fmt.Sprintf("chown %d:%d %s; chown 0:0 %s %s; chown 65534 %s", w.uid, w.uid, target, target, dir, target)},
						{"touch -d 2000-01-01 (utimes)", "touch -d 2000-01-01 " + target + " " + dir + "; touch -h -d 2000-01-01 " + target},
						{"setxattr user.x and security.capability", pyCommand(t, `import os
for p in ["`+target+`", "`+dir+`"]:
    for name, v in [("user.x", b"1"), ("security.capability", bytes.fromhex("0100000200200000000000000000000000000000")), ("trusted.x", b"1")]:
        try:
            os.setxattr(p, name, v); print("setxattr", p, name, "OK")
        except OSError as e:
            print("setxattr", name, "FAIL", e.errno)
try:
    os.utime("`+target+`", (0, 0)); print("utime OK")
except OSError as e:
    print("utime FAIL", e.errno)
`)},
						{"setfattr", "setfattr -n user.x -v 1 " + target},
						{"chattr +i", "chattr +i " + target + "; chattr +a " + dir},
					}
					for _, c := range cases {
						t.Run(c.name, func(t *testing.T) {
							before := []fileState{stateOf(t, target), stateOf(t, dir)}
							res := w.run(t, mode, c.command)
							after := []fileState{stateOf(t, target), stateOf(t, dir)}
							assert.Equal(t, before, after, "outside changed; output: %s%s", res.Stdout.Text, res.Stderr.Text)
							assert.NotContains(t, res.Stdout.Text, " OK")
						})
					}
				})
			}
		})
	}
}

// TestAttackTerminal (6): no terminal to inject input into: TIOCSTI on the
// standard descriptors fails, /dev/tty cannot be opened, /dev/pts holds no
// host terminal.
func TestAttackTerminal(t *testing.T) {
	w := newWorld(t, primaryOwner(), exec.Config{}, nil)
	res := w.run(t, sandbox.WorkspaceWrite, pyCommand(t, `import fcntl, termios, os
for fd in (0, 1, 2):
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b"x"); print("tiocsti", fd, "OK")
    except OSError as e:
        print("tiocsti", fd, "FAIL", e.errno)
try:
    t = os.open("/dev/tty", os.O_RDWR)
    print("devtty OK")
    fcntl.ioctl(t, termios.TIOCSTI, b"x"); print("tiocsti tty OK")
except OSError as e:
    print("devtty FAIL", e.errno)
print("pts", ",".join(sorted(os.listdir("/dev/pts"))))
`))
	require.EqualValues(t, 0, res.ExitCode, res.Stderr.Text)
	for _, fd := range []string{"0", "1", "2"} {
		assert.Contains(t, res.Stdout.Text, "tiocsti "+fd+" FAIL")
	}
	assert.Contains(t, res.Stdout.Text, "devtty FAIL")
	assert.NotContains(t, res.Stdout.Text, "OK")
	assert.Contains(t, res.Stdout.Text, "pts ptmx\n", "only the sandbox's own ptmx")
}

// TestAttackWorkdirInGit (7): a workdir at or beneath a protected or
// reserved `.git` is refused before anything runs.
func TestAttackWorkdirInGit(t *testing.T) {
	longTest(t)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := newWorld(t, o, exec.Config{}, func(f fixture) { writeTree(t, f.ws, gitTree) })
			bare := newWorld(t, o, exec.Config{}, nil)
			before := readTree(w.ws, gitFiles)
			for _, c := range []struct {
				name    string
				w       world
				workdir string
			}{
				{".git", w, filepath.Join(w.ws, ".git")},
				{".git/hooks", w, filepath.Join(w.ws, ".git", "hooks")},
				{"a nested .git", w, filepath.Join(w.ws, "sub", ".git")},
				{"a reserved .git", bare, filepath.Join(bare.ws, ".git")},
			} {
				t.Run(c.name, func(t *testing.T) {
					_, err := c.w.r.Run(t.Context(), exec.Request{
						Command: evilConfig + " >> config; touch pre-commit", Workdir: c.workdir, Timeout: time.Minute,
						Policy: carried(c.w.pol, sandbox.WorkspaceWrite, c.w.ws),
					})
					var ee *exec.Error
					require.ErrorAs(t, err, &ee)
					assert.EqualValues(t, exec.CodeInvalidRequest, ee.Code, ee.Message)
				})
			}
			assert.Equal(t, before, readTree(w.ws, gitFiles))
			_, err := os.Lstat(filepath.Join(bare.ws, ".git"))
			assert.ErrorIs(t, err, fs.ErrNotExist)
		})
	}
}

// TestAttackHelperReplaced (8): the helper (here a copy of the test binary
// inside the workspace) is opened once; a command that renames or writes
// another program over it changes nothing about what the next command runs.
func TestAttackHelperReplaced(t *testing.T) {
	longTest(t)
	self, err := os.Executable()
	require.NoError(t, err)
	bin, err := os.ReadFile(self)
	require.NoError(t, err)
	const evil = `printf '#!/bin/sh\nid > %s/pwned\necho EVIL >&2\n' > evil && chmod +x evil && `
	cases := []struct{ name, attack string }{
		{"renamed over", "mv -f evil helper"},
		{"written in place while the command runs", "cat evil > helper"},
		{"written in place once the stage is killed", ""},
	}
	// The last attack: a writer that spins on opening the helper for
	// writing (refused with ETXTBSY while the stage runs it) while the
	// shell kills the stage, its parent; the open succeeds between the
	// stage's end and the end of the sandbox.
	writer := `import os
evil = open("evil", "rb").read()
for i in range(2000000):
    try:
        fd = os.open("helper", os.O_WRONLY)
    except OSError:
        continue
    os.ftruncate(fd, 0); os.write(fd, evil); os.close(fd)
    break
`
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					var helper string
					w := newWorld(t, o, exec.Config{}, func(f fixture) {
						helper = filepath.Join(f.ws, "helper")
						require.NoError(t, os.WriteFile(helper, bin, 0o755))
					})
					// The runner of the world is rebuilt on the helper in the
					// workspace.
					r, err := execsandbox.New(execsandbox.Config{}, exec.Config{Helper: helper}, w.pol)
					require.NoError(t, err)
					w.r = r
					attack := c.attack
					if attack == "" {
						attack = pyCommand(t, writer) + " & sleep 0.3; kill -9 $PPID; sleep 2"
					}
					res, err := w.try(t.Context(), sandbox.WorkspaceWrite, fmt.Sprintf(evil, w.ws)+attack, 30*time.Second)
					require.NoError(t, err)
					t.Logf("attack: exit %d, stderr %.300q", res.ExitCode, res.Stderr.Text)
					for _, mode := range []sandbox.Mode{sandbox.WorkspaceWrite, sandbox.DangerFullAccess, sandbox.ReadOnly} {
						res, err := w.try(t.Context(), mode, "echo ok", time.Minute)
						if assert.NoError(t, err, "the next command under %s", mode) {
							assert.EqualValues(t, 0, res.ExitCode, res.Stderr.Text)
							assert.Equal(t, "ok\n", res.Stdout.Text)
						}
					}
					assert.NoFileExists(t, filepath.Join(w.ws, "pwned"), "the replaced helper ran")
				})
			}
		})
	}
}

// TestAttackProtectedSearch (9): the search for protected paths can be
// neither outrun, nor hung, nor turned against the workspace.
func TestAttackProtectedSearch(t *testing.T) {
	o := primaryOwner()
	t.Run("50,000 entries in -- before .git", func(t *testing.T) {
		w := newWorld(t, o, exec.Config{}, func(f fixture) {
			writeTree(t, f.ws, gitTree)
			dd := filepath.Join(f.ws, "--")
			require.NoError(t, os.Mkdir(dd, 0o755))
			for i := range 50_000 {
				fd, err := unix.Open(filepath.Join(dd, strconv.Itoa(i)), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
				require.NoError(t, err)
				require.NoError(t, unix.Close(fd))
			}
		})
		before := readTree(w.ws, gitFiles)
		res, err := w.try(t.Context(), sandbox.WorkspaceWrite, evilConfig+" >> .git/config && echo WROTE", time.Minute)
		t.Logf("error %v; exit %d, stderr %q", err, res.ExitCode, res.Stderr.Text)
		if err == nil {
			assert.NotContains(t, res.Stdout.Text, "WROTE")
		}
		assert.Equal(t, before, readTree(w.ws, gitFiles), "protected files changed on disk")
	})
	t.Run(".git is a FIFO", func(t *testing.T) {
		w := newWorld(t, o, exec.Config{}, func(f fixture) {
			require.NoError(t, unix.Mkfifo(filepath.Join(f.ws, ".git"), 0o644))
		})
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		start := time.Now()
		res, err := w.try(ctx, sandbox.WorkspaceWrite, "echo x > f", 10*time.Second)
		require.NoError(t, err)
		assert.Less(t, time.Since(start), 10*time.Second)
		assert.EqualValues(t, 0, res.ExitCode, res.Stderr.Text)
		assert.FileExists(t, filepath.Join(w.ws, "f"))
	})
	t.Run(".git swapped between a file and a FIFO during the search", func(t *testing.T) {
		testSwappedGit(t, o)
	})
	t.Run("a symlink .git -> / in the workspace", func(t *testing.T) {
		w := newWorld(t, o, exec.Config{}, func(f fixture) {
			require.NoError(t, os.Symlink("/", filepath.Join(f.ws, ".git")))
		})
		res, err := w.try(t.Context(), sandbox.WorkspaceWrite, "echo x > f", time.Minute)
		if assert.NoError(t, err) {
			assert.EqualValues(t, 0, res.ExitCode, res.Stderr.Text)
		}
		assert.FileExists(t, filepath.Join(w.ws, "f"))
	})
	t.Run("a symlink sub/.git -> / planted by a command", func(t *testing.T) {
		w := newWorld(t, o, exec.Config{}, nil)
		res := w.run(t, sandbox.WorkspaceWrite, "mkdir sub && ln -s / sub/.git")
		require.EqualValues(t, 0, res.ExitCode, res.Stderr.Text)
		res, err := w.try(t.Context(), sandbox.WorkspaceWrite, "echo x > f", time.Minute)
		if assert.NoError(t, err) {
			assert.EqualValues(t, 0, res.ExitCode, res.Stderr.Text)
		}
		assert.FileExists(t, filepath.Join(w.ws, "f"))
	})
	t.Run("a sparse 128 MiB sub/.git file planted by a command", func(t *testing.T) {
		w := newWorld(t, o, exec.Config{}, nil)
		res := w.run(t, sandbox.WorkspaceWrite, "mkdir big && truncate -s 128M big/.git")
		require.EqualValues(t, 0, res.ExitCode, res.Stderr.Text)
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		start := time.Now()
		res, err := w.try(t.Context(), sandbox.WorkspaceWrite, "true", time.Minute)
		took := time.Since(start)
		runtime.ReadMemStats(&m1)
		require.NoError(t, err)
		assert.EqualValues(t, 0, res.ExitCode, res.Stderr.Text)
		alloc := m1.TotalAlloc - m0.TotalAlloc
		t.Logf("the server allocated %d MiB and took %v for one command", alloc>>20, took)
		assert.Less(t, alloc, uint64(32<<20), "the server read the planted .git file into memory")
	})
}

// testSwappedGit runs commands while the workspace's `.git` is swapped
// between a regular file and a FIFO: each call must return (a FIFO opened
// for reading blocks until a writer comes). A call that hangs is freed by
// opening every FIFO for writing.
func testSwappedGit(t *testing.T, o owner) {
	w := newWorld(t, o, exec.Config{}, nil)
	fifos := filepath.Join(w.outside, "fifos")
	require.NoError(t, os.Mkdir(fifos, 0o755))
	gitPath, tmp := filepath.Join(w.ws, ".git"), filepath.Join(w.ws, ".git.swap")
	stop := make(chan struct{})
	var swapper sync.WaitGroup
	var made atomic.Int64
	swapper.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				_ = os.WriteFile(tmp, []byte("gitdir: ../mod/gitdir\n"), 0o644)
			} else {
				fifo := filepath.Join(fifos, strconv.Itoa(i))
				if unix.Mkfifo(fifo, 0o644) != nil || os.Link(fifo, tmp) != nil {
					continue
				}
				made.Add(1)
			}
			_ = os.Rename(tmp, gitPath)
		}
	})
	unblock := func() {
		entries, _ := os.ReadDir(fifos)
		for _, e := range entries {
			if fd, err := unix.Open(filepath.Join(fifos, e.Name()), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
				_ = unix.Close(fd)
			}
		}
	}
	defer func() {
		close(stop)
		swapper.Wait()
		unblock()
	}()
	deadline := time.Now().Add(8 * time.Second)
	runs, hangs, refused := 0, 0, 0
	for time.Now().Before(deadline) && hangs == 0 {
		runs++
		done := make(chan error, 1)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		go func() {
			_, err := w.try(ctx, sandbox.WorkspaceWrite, "true", 5*time.Second)
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(15 * time.Second):
			hangs++
			// Free the call: open every FIFO made so far for writing.
			for freed := false; !freed; {
				unblock()
				select {
				case err = <-done:
					freed = true
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
		if err != nil {
			// Refusing a command whose search could not finish is fine.
			if refused == 0 {
				t.Logf("refused: %v", err)
			}
			refused++
		}
		cancel()
	}
	t.Logf("%d calls (%d refused), %d FIFOs swapped in", runs, refused, made.Load())
	assert.Zero(t, hangs, "a call with a 5 s timeout and a 30 s context deadline had not returned after 15 s (blocked opening a FIFO .git)")
}

// TestAttackLifetime (10): nothing a command starts outlives its call, and
// the server is out of its reach.
func TestAttackLifetime(t *testing.T) {
	longTest(t)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := newWorld(t, o, exec.Config{}, nil)
			t.Run("fork and exit in a loop until the timeout", func(t *testing.T) {
				marker := "1000." + uniqueMarker()
				res, err := w.try(t.Context(), sandbox.WorkspaceWrite, "while :; do (sleep "+marker+" &) ; done", 2*time.Second)
				require.NoError(t, err)
				assert.True(t, res.TimedOut)
				assert.Empty(t, liveProcesses(marker), "processes outlived the call")
			})
			t.Run("fork and exit in a loop until the context is cancelled", func(t *testing.T) {
				marker := "1000." + uniqueMarker()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				// Cancelled once the loop runs, however long the start
				// took (under load, more than a fixed delay).
				started := filepath.Join(w.ws, "started."+marker)
				go func() {
					tick := time.NewTicker(20 * time.Millisecond)
					defer tick.Stop()
					for ctx.Err() == nil {
						if _, err := os.Lstat(started); err == nil {
							time.Sleep(500 * time.Millisecond)
							cancel()
							return
						}
						<-tick.C
					}
				}()
				res, err := w.try(ctx, sandbox.WorkspaceWrite, "touch "+started+"; while :; do (sleep "+marker+" &) ; done", time.Minute)
				require.NoError(t, err)
				assert.True(t, res.Cancelled)
				assert.Empty(t, liveProcesses(marker), "processes outlived the call")
			})
			t.Run("prlimit and renice of the server", func(t *testing.T) {
				var before, after unix.Rlimit
				require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &before))
				prio, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
				require.NoError(t, err)
				res := w.run(t, sandbox.WorkspaceWrite, fmt.Sprintf(
					"prlimit --nofile=3:3 --pid %[1]d; echo prlimit=$?; renice -n 19 -p %[1]d; echo renice=$?", os.Getpid()))
				require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &after))
				assert.Equal(t, before, after, "the server's RLIMIT_NOFILE")
				prioAfter, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
				require.NoError(t, err)
				assert.Equal(t, prio, prioAfter, "the server's priority")
				assert.NotContains(t, res.Stdout.Text, "prlimit=0", res.Stderr.Text)
				assert.NotContains(t, res.Stdout.Text, "renice=0", res.Stderr.Text)
			})
		})
	}
}

// TestAttackLimits (11): the default memory and process caps hold, and a
// fork bomb neither outlives its call nor starves the server.
func TestAttackLimits(t *testing.T) {
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := newWorld(t, o, exec.Config{}, nil)
			t.Run("a 4 GiB allocation", func(t *testing.T) {
				res := w.run(t, sandbox.WorkspaceWrite, pyCommand(t, "b = bytearray(4 << 30)\nprint('ALLOCATED')"))
				assert.NotEqual(t, 0, res.ExitCode)
				assert.NotContains(t, res.Stdout.Text, "ALLOCATED")
			})
			t.Run("600 processes", func(t *testing.T) {
				res := w.run(t, sandbox.WorkspaceWrite, pyCommand(t, countProcesses))
				_, n, ok := strings.Cut(res.Stdout.Text, "started ")
				require.True(t, ok, "%s%s", res.Stdout.Text, res.Stderr.Text)
				started, err := strconv.Atoi(strings.TrimSpace(n))
				require.NoError(t, err)
				t.Logf("%d of 600 processes started", started)
				assert.LessOrEqual(t, started, execsandbox.DefaultPids, "the pids cap (%d) does not hold", execsandbox.DefaultPids)
			})
			t.Run("fork bomb", func(t *testing.T) { testForkBomb(t, w) })
		})
	}
}

// countProcesses starts up to 600 processes that wait together, prints
// "started N", then lets them end.
const countProcesses = `import os
r, w = os.pipe()
n = 0
for i in range(600):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    n += 1
os.close(w)
for i in range(n):
    os.wait()
print("started", n)
`

// testForkBomb lights a fork bomb for 5 s while the test process reads a
// small file every 200 ms. The command first checks its own pids cap and
// lights the bomb only when the cap holds: an uncapped bomb would take the
// shared host's pids.
func testForkBomb(t *testing.T, w world) {
	if !hasCommand("bash") {
		t.Skip("bash is not installed (dash refuses the function name :)")
	}
	marker := "bomb" + uniqueMarker()
	small := filepath.Join(w.outside, "small")
	require.NoError(t, os.WriteFile(small, []byte("x"), 0o644))
	var maxLatency time.Duration
	probes := make(chan struct{})
	go func() {
		defer close(probes)
		time.Sleep(100 * time.Millisecond)
		for range 20 {
			start := time.Now()
			_, err := os.ReadFile(small)
			assert.NoError(t, err)
			maxLatency = max(maxLatency, time.Since(start))
			time.Sleep(200 * time.Millisecond)
		}
	}()
	command := "n=$(" + pyCommand(t, countProcesses) + `); case "$n" in "started 600") echo UNCAPPED; exit 3;; esac; ` +
		"bash -c ':(){ :|:& };:; sleep 10 # " + marker + "'"
	start := time.Now()
	res, err := w.try(t.Context(), sandbox.WorkspaceWrite, command, 5*time.Second)
	took := time.Since(start)
	<-probes
	require.NoError(t, err)
	if strings.Contains(res.Stdout.Text, "UNCAPPED") {
		t.Fatal("not run: this command's pids cap did not hold (600 processes started)")
	}
	t.Logf("the call took %v; the slowest of 20 reads of a small file while it ran took %v", took, maxLatency)
	// The shell that lit the bomb waits, so the bomb runs until the
	// timeout.
	assert.True(t, res.TimedOut)
	assert.Less(t, took, 15*time.Second)
	assert.Empty(t, liveProcesses(marker), "fork bomb processes outlived the call")
	assert.Less(t, maxLatency, 100*time.Millisecond, "the server starved while the bomb ran")
}

// TestAttackNetwork (12): without the network a command cannot reach the
// host's loopback, but has a loopback and a /dev/shm of its own.
func TestAttackNetwork(t *testing.T) {
	w := newWorld(t, primaryOwner(), exec.Config{}, nil)
	t.Run("the host's 127.0.0.1 is out of reach", func(t *testing.T) {
		port, accepted := hostListener(t, "tcp", "127.0.0.1:0")
		res := w.run(t, sandbox.WorkspaceWrite, pyCommand(t, fmt.Sprintf(`import socket
try:
    socket.create_connection(("127.0.0.1", %d), timeout=5); print("CONNECTED")
except OSError as e:
    print("connect FAIL", e.errno)
`, port))+fmt.Sprintf("; (exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null && echo CONNECTED; true", port))
		assert.NotContains(t, res.Stdout.Text, "CONNECTED", res.Stderr.Text)
		assert.Contains(t, res.Stdout.Text, "connect FAIL", res.Stderr.Text)
		time.Sleep(100 * time.Millisecond)
		assert.Zero(t, accepted.Load(), "connections the host's listener accepted")
	})
	t.Run("its own 127.0.0.1 works", func(t *testing.T) {
		res := w.run(t, sandbox.WorkspaceWrite, pyCommand(t, `import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
c = socket.create_connection(s.getsockname(), timeout=5); a, _ = s.accept()
c.sendall(b"ping"); print("LOOPBACK", a.recv(4).decode())
`))
		assert.Equal(t, "LOOPBACK ping\n", res.Stdout.Text, res.Stderr.Text)
	})
	t.Run("/dev/shm is writable and multiprocessing.Lock works", func(t *testing.T) {
		res := w.run(t, sandbox.WorkspaceWrite, "echo x > /dev/shm/x && cat /dev/shm/x && "+
			pyCommand(t, "import multiprocessing\nl = multiprocessing.Lock()\nl.acquire(); l.release(); print('LOCK OK')"))
		assert.Equal(t, "x\nLOCK OK\n", res.Stdout.Text, res.Stderr.Text)
	})
}

// TestAttackReservedGit (13): a workspace without `.git` cannot be given
// one by a command, alone or with others running beside it, and the mount
// point the sandbox made for the reservation is gone after the call.
func TestAttackReservedGit(t *testing.T) {
	longTest(t)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := newWorld(t, o, exec.Config{}, func(f fixture) { writeTree(t, f.ws, map[string]string{"d/config": "x\n"}) })
			gitPath := filepath.Join(w.ws, ".git")
			noGit := func(t *testing.T) {
				t.Helper()
				_, err := os.Lstat(gitPath)
				assert.ErrorIs(t, err, fs.ErrNotExist, "the workspace has a .git after the call")
			}
			for _, c := range []struct{ name, command string }{
				{"mkdir .git", "mkdir .git"},
				{"git init", "git init -q ."},
				{"a hook", "mkdir -p .git/hooks && touch .git/hooks/pre-commit"},
				{"a symlink", "ln -s /tmp .git"},
				{"a directory renamed to .git", "mv d .git"},
				{"a .git file", "echo 'gitdir: /tmp/evil' > .git"},
			} {
				t.Run(c.name, func(t *testing.T) {
					res := w.run(t, sandbox.WorkspaceWrite, c.command)
					assert.NotEqual(t, 0, res.ExitCode)
					noGit(t)
				})
			}
			t.Run("two concurrent commands", func(t *testing.T) {
				var wg sync.WaitGroup
				results := make([]exec.Result, 2)
				errs := make([]error, 2)
				for i := range 2 {
					wg.Go(func() {
						results[i], errs[i] = w.try(t.Context(), sandbox.WorkspaceWrite,
							"sleep 0.2; git init -q . || mkdir -p .git/hooks; "+evilConfig+" > .git/config && echo WROTE; sleep 0.3", time.Minute)
					})
				}
				wg.Wait()
				for i := range 2 {
					require.NoError(t, errs[i])
					assert.NotContains(t, results[i].Stdout.Text, "WROTE")
				}
				noGit(t)
			})
		})
	}
	t.Run("a command racing others that reserve .git", func(t *testing.T) {
		testReservedRace(t, primaryOwner())
	})
}

// testReservedRace runs, side by side, commands that make the reserved
// `.git`'s mount point appear and disappear, and commands that try to write
// `.git/config`, for reservedRaceFor; a workspace with many entries after
// `.git` slows the search that decides what is protected and reserved.
func testReservedRace(t *testing.T, o owner) {
	w := newWorld(t, o, exec.Config{}, func(f fixture) {
		dir := filepath.Join(f.ws, "zz")
		require.NoError(t, os.Mkdir(dir, 0o755))
		for i := range 20_000 {
			fd, err := unix.Open(filepath.Join(dir, strconv.Itoa(i)), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
			require.NoError(t, err)
			require.NoError(t, unix.Close(fd))
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), reservedRaceFor())
	defer cancel()
	var wrote atomic.Bool
	var runs atomic.Int64
	var wg sync.WaitGroup
	for _, command := range []string{"sleep 0.05", "mkdir -p .git && " + evilConfig + " > .git/config && echo WROTE"} {
		wg.Go(func() {
			for ctx.Err() == nil && !wrote.Load() {
				res, err := w.try(ctx, sandbox.WorkspaceWrite, command, 10*time.Second)
				runs.Add(1)
				if err == nil && strings.Contains(res.Stdout.Text, "WROTE") {
					wrote.Store(true)
				}
			}
		})
	}
	wg.Wait()
	config, _ := os.ReadFile(filepath.Join(w.ws, ".git", "config"))
	t.Logf("%d calls; .git/config on disk: %q", runs.Load(), config)
	assert.False(t, wrote.Load(), "a command wrote .git/config")
	_, err := os.Lstat(filepath.Join(w.ws, ".git"))
	assert.ErrorIs(t, err, fs.ErrNotExist, "the workspace has a .git after the calls")
}

// reservedRaceFor is how long testReservedRace's commands race: a minute
// under HARNESS_SOAK=1 (make soak), 8 s in make test (about 190 calls on a
// quiet 2-core machine under the race detector), 3 s with -short.
func reservedRaceFor() time.Duration {
	switch {
	case os.Getenv("HARNESS_SOAK") == "1":
		return time.Minute
	case testing.Short():
		return 3 * time.Second
	}
	return 8 * time.Second
}

// hostListener listens on the host at address (network "tcp" or "tcp4"),
// counts the connections it accepts (closing each) until t ends, and
// returns its port and that count.
func hostListener(t *testing.T, network, address string) (int, *atomic.Int64) {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), network, address)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	accepted := new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, accepted
}
