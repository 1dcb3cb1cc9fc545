//go:build linux

package execsandbox_test

// Second attack round on the bubblewrap runner: the mechanisms added after
// the first (attack_test.go): the ancestor mount points, the reserved
// `.git`, the sealed helper, the socket families, the cgroup caps, the
// lifetime of a command's tree and the protected-path search. Each check is
// on disk, on the output or on the processes left; a failing row is a hole,
// reported in its message. Run as root and as uid 1000:
//
//	go test -count=1 -run Attack2 -v ./services/execsandbox/
//	go test -c -o /tmp/ex2.test ./services/execsandbox/ && chmod 755 /tmp/ex2.test
//	cd /tmp/u1000b && setpriv --reuid=1000 --regid=1000 --init-groups env -i HOME=/tmp/u1000b \
//	    TMPDIR=/tmp/u1000b PATH=/usr/local/go/bin:/usr/bin:/bin /tmp/ex2.test -test.run Attack2 -test.v

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// Environment of the peer process (TestAttack2Peer), a second server in a
// process of its own.
const (
	peerModeEnv = "ATTACK2_PEER_MODE"
	peerWSEnv   = "ATTACK2_PEER_WS"
	peerCmdEnv  = "ATTACK2_PEER_CMD"
)

// withRunner returns w with a runner built from cfg.
func withRunner(t *testing.T, w world, cfg execsandbox.Config) world {
	t.Helper()
	r, err := execsandbox.New(cfg, exec.Config{}, w.pol)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	w.r = r
	return w
}

// protectedStates returns the state of each of paths.
func protectedStates(t *testing.T, paths []string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	for _, p := range paths {
		out[p] = stateOf(t, p)
	}
	return out
}

// assertUnchanged checks every path of before still has its state.
func assertUnchanged(t *testing.T, before map[string]fileState, why string) {
	t.Helper()
	for p, st := range before {
		if _, err := os.Lstat(p); err != nil {
			assert.Failf(t, "a protected file is gone", "%s: %s (%v)", why, p, err)
			continue
		}
		assert.Equal(t, st, stateOf(t, p), "%s: %s changed on disk", why, p)
	}
}

// noGitAt checks root has no `.git` entry.
func noGitAt(t *testing.T, root, why string) {
	t.Helper()
	_, err := os.Lstat(filepath.Join(root, ".git"))
	assert.ErrorIs(t, err, fs.ErrNotExist, "%s: %s/.git exists", why, root)
}

// hostGit runs git on the host with a fixed identity.
func hostGit(t *testing.T, args ...string) string {
	t.Helper()
	cmd := osexec.Command("git", append([]string{"-c", "safe.directory=*"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

func needGit(t *testing.T) {
	t.Helper()
	if !hasCommand("git") {
		t.Skip("git is not installed")
	}
}

// TestAttack2Ancestors (1): the directories between a root and a protected
// path are mount points of their own; removing, renaming, hard-linking and
// symlinking around them leaves every protected file as it was.
func TestAttack2Ancestors(t *testing.T) {
	longTest(t)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			var files []string
			w := newWorld(t, o, exec.Config{}, func(f fixture) {
				writeTree(t, f.ws, map[string]string{
					"a/b/repo/.git/config":      "[core]\n",
					"a/b/repo/.git/HEAD":        "ref: refs/heads/main\n",
					"a/b/repo/.git/hooks/keep":  "",
					"a/b/repo/file":             "work\n",
					"real/.git/config":          "[core]\n",
					"wt/.git":                   "gitdir: " + filepath.Join(f.cache, "gd") + "\n",
					"rel/.git":                  "gitdir: ../../cache/gd2\n",
					"a/b/repo/.git/objects/obj": "blob",
				})
				writeTree(t, f.cache, map[string]string{
					"gd/HEAD":          "ref: refs/heads/main\n",
					"gd/config":        "[core]\n",
					"gd/commondir":     "../common\n",
					"common/config":    "[core]\n",
					"common/HEAD":      "ref: refs/heads/main\n",
					"common/hooks/x":   "",
					"gd2/config":       "[core]\n",
					"gd2/hooks/keep":   "",
					"deep/x/.git/HEAD": "ref: refs/heads/main\n",
				})
				require.NoError(t, os.Symlink("real", filepath.Join(f.ws, "plink")))
				require.NoError(t, os.Symlink("a/b", filepath.Join(f.ws, "blink")))
				files = []string{
					filepath.Join(f.ws, "a/b/repo/.git/config"), filepath.Join(f.ws, "a/b/repo/.git/HEAD"),
					filepath.Join(f.ws, "a/b/repo/.git/objects/obj"), filepath.Join(f.ws, "real/.git/config"),
					filepath.Join(f.ws, "wt/.git"), filepath.Join(f.ws, "rel/.git"),
					filepath.Join(f.cache, "gd/config"), filepath.Join(f.cache, "gd/commondir"),
					filepath.Join(f.cache, "common/config"), filepath.Join(f.cache, "gd2/config"),
					filepath.Join(f.cache, "deep/x/.git/HEAD"),
				}
			})
			cache := w.cache
			cases := []struct{ name, command string }{
				{"rm -rf a directory holding a nested repo", "rm -rf a; rm -rf blink/repo"},
				{"mv the deepest ancestor", "mv a/b/repo moved"},
				{"mv a middle ancestor", "mv a/b moved"},
				{"mv the shallowest ancestor", "mv a moved"},
				{"mv through a symlinked ancestor", "mv blink/repo moved; mv -T blink/ moved2"},
				{"rename the ancestor's contents away with find -delete", "find a -depth -delete"},
				{"hard link into .git from outside it", "ln a/b/repo/.git/config x && " + evilConfig + " >> x; ln a/b/repo/.git/objects/obj y && echo evil >> y"},
				{"hard link a .git file from outside it", "ln wt/.git z && echo 'gitdir: /tmp' > z"},
				{"write through a symlinked parent", evilConfig + " >> plink/.git/config"},
				{"replace the symlinked parent", "rm plink && mkdir -p plink/.git && " + evilConfig + " > plink/.git/config; " + evilConfig + " >> real/.git/config"},
				{"gitdir and commondir in the extra root", evilConfig + " >> " + cache + "/gd/config; echo /tmp > " + cache + "/gd/commondir; " +
					evilConfig + " >> " + cache + "/common/config; touch " + cache + "/common/hooks/pre-commit; mv " + cache + "/common " + cache + "/c2; mv " + cache + "/gd " + cache + "/g3"},
				{"relative gitdir in the extra root", evilConfig + " >> " + cache + "/gd2/config; touch " + cache + "/gd2/hooks/pre-commit; mv " + cache + "/gd2 " + cache + "/g4"},
				{"a repo deep in the extra root", "rm -rf " + cache + "/deep; mv " + cache + "/deep/x " + cache + "/y"},
			}
			before := protectedStates(t, files)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					res := w.run(t, sandbox.WorkspaceWrite, c.command)
					t.Logf("exit %d, stderr %.400q", res.ExitCode, res.Stderr.Text)
					assertUnchanged(t, before, c.name)
					assert.NoFileExists(t, filepath.Join(cache, "gd/hooks/pre-commit"))
					assert.NoFileExists(t, filepath.Join(cache, "common/hooks/pre-commit"))
					assert.NoFileExists(t, filepath.Join(cache, "gd2/hooks/pre-commit"))
				})
			}
		})
	}
}

// TestAttack2GitShapes (1, 8): repository directories git uses that are not
// named `.git`. Each row writes the directory's config and a hook; a row
// that fails is a repository a command can arm against the host user's
// next git command.
func TestAttack2GitShapes(t *testing.T) {
	needGit(t)
	o := primaryOwner()
	t.Run("a bare repository in the workspace (the file tools refuse it by shape)", func(t *testing.T) {
		w := newWorld(t, o, exec.Config{}, func(f fixture) {
			hostGit(t, "init", "-q", "--bare", filepath.Join(f.ws, "remote.git"))
		})
		bare := filepath.Join(w.ws, "remote.git")
		before := protectedStates(t, []string{filepath.Join(bare, "config"), filepath.Join(bare, "HEAD")})
		res := w.run(t, sandbox.WorkspaceWrite, evilConfig+" >> remote.git/config; printf '#!/bin/sh\\nid > /tmp/pwned\\n' > remote.git/hooks/post-receive && chmod +x remote.git/hooks/post-receive")
		t.Logf("exit %d, stderr %.300q", res.ExitCode, res.Stderr.Text)
		assertUnchanged(t, before, "bare repository")
		assert.NoFileExists(t, filepath.Join(bare, "hooks/post-receive"),
			"HOLE: a command planted a post-receive hook in the workspace's bare repository %s (the next `git push` to it runs it on the host)", bare)
	})
	t.Run("a .git file whose gitdir is the extra writable root itself", func(t *testing.T) {
		w := newWorld(t, o, exec.Config{}, func(f fixture) {
			hostGit(t, "init", "-q", "--separate-git-dir="+f.cache, f.ws)
		})
		require.Equal(t, w.cache+"\n", hostGit(t, "-C", w.ws, "rev-parse", "--absolute-git-dir"))
		before := protectedStates(t, []string{filepath.Join(w.cache, "config"), filepath.Join(w.cache, "HEAD"), filepath.Join(w.ws, ".git")})
		res := w.run(t, sandbox.WorkspaceWrite, evilConfig+" >> "+w.cache+"/config; mkdir -p "+w.cache+"/hooks; touch "+w.cache+"/hooks/pre-commit")
		t.Logf("exit %d, stderr %.300q", res.ExitCode, res.Stderr.Text)
		assertUnchanged(t, before, "gitdir = extra root")
		assert.NoFileExists(t, filepath.Join(w.cache, "hooks/pre-commit"),
			"HOLE: the workspace's gitdir %s is an extra writable root, not protected (below() wants it strictly inside a root)", w.cache)
	})
	t.Run("a .git file whose gitdir ends in a space", func(t *testing.T) {
		w := newWorld(t, o, exec.Config{}, func(f fixture) {
			gd := filepath.Join(f.cache, "gd ")
			hostGit(t, "init", "-q", "--bare", gd)
			require.NoError(t, os.MkdirAll(filepath.Join(f.ws, "wt"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(f.ws, "wt/.git"), []byte("gitdir: "+gd+"\n"), 0o644))
		})
		gd := filepath.Join(w.cache, "gd ")
		require.Equal(t, gd+"\n", hostGit(t, "-C", filepath.Join(w.ws, "wt"), "rev-parse", "--absolute-git-dir"), "git keeps the trailing space")
		before := protectedStates(t, []string{filepath.Join(gd, "config")})
		res := w.run(t, sandbox.WorkspaceWrite, evilConfig+" >> '"+gd+"/config'")
		t.Logf("exit %d, stderr %.300q", res.ExitCode, res.Stderr.Text)
		assertUnchanged(t, before, "HOLE: git keeps the trailing space of a gitdir line (setup.c read_gitfile_gently strips only \\r and \\n), protectscan.readPointer trims it, so the real gitdir is not protected")
	})
	t.Run("documented: a .git in an extra writable root or a new nested repo", func(t *testing.T) {
		w := newWorld(t, o, exec.Config{}, nil)
		res := w.run(t, sandbox.WorkspaceWrite, "git init -q "+w.cache+" && git init -q sub && "+evilConfig+" >> sub/.git/config")
		_, errCache := os.Lstat(filepath.Join(w.cache, ".git"))
		_, errSub := os.Lstat(filepath.Join(w.ws, "sub/.git/config"))
		t.Logf("exit %d; extra root .git created: %v; nested sub/.git created: %v (both outside the protected set by the README: only a workspace root's top-level .git is reserved)",
			res.ExitCode, errCache == nil, errSub == nil)
	})
}

// TestAttack2Reserved (2): a workspace without `.git` cannot be given one,
// by a command, a process it leaves behind, or a second server; nothing of
// the reservation is left on disk.
func TestAttack2Reserved(t *testing.T) {
	longTest(t)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := newWorld(t, o, exec.Config{}, nil)
			for _, c := range []struct{ name, command string }{
				{"git init in a subdirectory moved to the root", "git init -q sub && mv sub/.git .git; mv -T sub/.git .git; ls -d .git"},
				{"a directory renamed over the reserved .git", "mkdir -p d/hooks && mv -T d .git; rmdir .git; mv d .git"},
				{"setsid background waits for the end", "setsid sh -c 'sleep 1; mkdir .git && " + evilConfig + " > .git/config' >/dev/null 2>&1 < /dev/null &"},
				{"nohup background", "nohup sh -c 'sleep 1; mkdir .git' >/dev/null 2>&1 &"},
				{"double fork", "( ( sleep 1; git init -q . ) & ) ; true"},
			} {
				t.Run(c.name, func(t *testing.T) {
					// Every process that could act later carries the
					// marker in its command line: the sleep, and the
					// shells forked or started to wait for it. None may be
					// left when the call returns (the command's whole tree
					// ends with it), so nothing can make .git afterwards;
					// before, the test waited 2 s to see none did.
					marker := uniqueMarker()
					res := w.run(t, sandbox.WorkspaceWrite, strings.ReplaceAll(c.command, "sleep 1", "sleep 1."+marker))
					t.Logf("exit %d, stderr %.200q", res.ExitCode, res.Stderr.Text)
					assert.Empty(t, liveProcesses(marker), "a process of the command outlived the call")
					noGitAt(t, w.ws, c.name)
				})
			}
			t.Run("two Runners of one process", func(t *testing.T) {
				r2, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, w.pol)
				require.NoError(t, err)
				var wg sync.WaitGroup
				var wrote string
				wg.Go(func() { _ = w.run(t, sandbox.WorkspaceWrite, "sleep 1.5") })
				time.Sleep(500 * time.Millisecond)
				res, err := r2.Run(t.Context(), exec.Request{
					Command: "sleep 2.5; mkdir -p .git && " + evilConfig + " > .git/config && echo WROTE", Workdir: w.ws, Timeout: time.Minute,
					Policy: carried(w.pol, sandbox.WorkspaceWrite, w.ws),
				})
				wg.Wait()
				require.NoError(t, err)
				wrote = res.Stdout.Text
				assert.NotContains(t, wrote, "WROTE")
				noGitAt(t, w.ws, "two Runners")
			})
			t.Run("leftovers after a timeout and a cancellation", func(t *testing.T) {
				res, err := w.try(t.Context(), sandbox.WorkspaceWrite, "sleep 30", time.Second)
				require.NoError(t, err)
				assert.True(t, res.TimedOut)
				noGitAt(t, w.ws, "after a timeout")
				// Cancelled once it runs (at load 17 its view took more
				// than the 700 ms it was given, and the search was what
				// the cancellation stopped).
				ctx, cancel := context.WithCancel(t.Context())
				started := filepath.Join(w.ws, "started")
				go func() {
					for ctx.Err() == nil {
						if _, err := os.Stat(started); err == nil {
							cancel()
							return
						}
						time.Sleep(10 * time.Millisecond)
					}
				}()
				res, err = w.try(ctx, sandbox.WorkspaceWrite, "touch started; sleep 30", time.Minute)
				cancel()
				_ = os.Remove(started)
				require.NoError(t, err)
				assert.True(t, res.Cancelled)
				noGitAt(t, w.ws, "after a cancellation")
			})
			t.Run("a second server process", func(t *testing.T) {
				testCrossProcessReserved(t, w)
			})
		})
	}
}

// testCrossProcessReserved: a peer process (a second server on the same
// workspace) runs a command that reserves the missing `.git`; bwrap makes its
// mount point on disk. A command of this process started meanwhile finds
// that empty directory, takes it for a real `.git` and binds it read-only.
// When the peer's command ends, the peer removes the directory (rmdir), which
// detaches the read-only bind from this command's mount namespace; the
// command then creates `.git` for real.
func testCrossProcessReserved(t *testing.T, w world) {
	peer := startPeer(t, "run", w.ws, "sleep 2")
	gitPath := filepath.Join(w.ws, ".git")
	require.Eventually(t, func() bool { _, err := os.Lstat(gitPath); return err == nil }, 20*time.Second, 10*time.Millisecond,
		"the peer's reserved .git never appeared on disk")
	res, err := w.try(t.Context(), sandbox.WorkspaceWrite,
		"sleep 4; mkdir -p .git/hooks && "+evilConfig+" > .git/config && echo WROTE", time.Minute)
	out := peer.wait(t)
	require.NoError(t, err)
	t.Logf("peer: %s; this command: exit %d stdout %q stderr %.200q", out, res.ExitCode, res.Stdout.Text, res.Stderr.Text)
	config, _ := os.ReadFile(filepath.Join(gitPath, "config"))
	assert.NotContains(t, res.Stdout.Text, "WROTE",
		"HOLE: across two server processes, the peer's rmdir of its reserved .git mount point detached this command's read-only bind; the command wrote %s/config: %q", gitPath, config)
	noGitAt(t, w.ws, "two server processes")
	_ = os.RemoveAll(gitPath)
}

// peerProcess is a second server, this test binary running TestAttack2Peer.
type peerProcess struct {
	cmd *osexec.Cmd
	out *strings.Builder
}

func startPeer(t *testing.T, mode, ws, command string) *peerProcess {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := osexec.Command(self, "-test.run", "^TestAttack2Peer$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), peerModeEnv+"="+mode, peerWSEnv+"="+ws, peerCmdEnv+"="+command)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return &peerProcess{cmd: cmd, out: out}
}

func (p *peerProcess) wait(t *testing.T) string {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		t.Logf("peer ended: %v", err)
	case <-time.After(2 * time.Minute):
		_ = p.cmd.Process.Kill()
		err := <-done
		t.Errorf("the peer did not end (%v)", err)
	}
	var lines []string
	for l := range strings.SplitSeq(p.out.String(), "\n") {
		if strings.HasPrefix(l, "PEER ") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}

// TestAttack2Peer is the peer process of the cross-process rows; it does
// nothing unless started by startPeer.
func TestAttack2Peer(t *testing.T) {
	mode := os.Getenv(peerModeEnv)
	if mode == "" {
		t.Skip("the peer of the cross-process rows (started by them)")
	}
	ws := os.Getenv(peerWSEnv)
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{WorkspaceRoot: ws, TempRoots: []string{}})
	require.NoError(t, err)
	cfg := execsandbox.Config{}
	n := 1
	if mode == "close" {
		cfg.Memory, cfg.Pids = 64<<20, 64
		n = 5
	}
	r, err := execsandbox.New(cfg, exec.Config{}, pol)
	require.NoError(t, err)
	for range n {
		res, err := r.Run(context.Background(), exec.Request{
			Command: os.Getenv(peerCmdEnv), Workdir: ws, Timeout: time.Minute,
			Policy: carried(pol, sandbox.WorkspaceWrite, ws),
		})
		fmt.Printf("PEER exit=%d stdout=%q stderr=%.200q err=%v\n", res.ExitCode, res.Stdout.Text, res.Stderr.Text, err)
	}
	if mode == "close" {
		fmt.Printf("PEER close=%v\n", r.Close())
		for _, d := range ownCgroupDirs() {
			if _, err := os.Stat(d); err == nil {
				fmt.Printf("PEER LEFT %s\n", d)
			}
		}
	}
}

// ownCgroupDirs are this process's parent groups in the cgroup v1 memory and
// pids hierarchies (harness-<pid> beneath this process's own cgroup).
func ownCgroupDirs() []string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	var out []string
	for l := range strings.SplitSeq(string(b), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) != 3 || (f[1] != "memory" && f[1] != "pids") {
			continue
		}
		out = append(out, filepath.Join("/sys/fs/cgroup", f[1], f[2], fmt.Sprintf("harness-%d", os.Getpid())))
	}
	return out
}

// TestAttack2Helper (3): what runs as the stage is what New opened, and a
// command holds no writable handle on it.
func TestAttack2Helper(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	bin, err := os.ReadFile(self)
	require.NoError(t, err)
	o := primaryOwner()
	evil := []byte("#!/bin/sh\nid > \"$(dirname \"$0\")/pwned\" 2>/dev/null; echo EVIL-STAGE >&2; exit 3\n")
	replaced := func(t *testing.T, replace func(helper string)) (world, exec.Result, error) {
		var helper string
		w := newWorld(t, o, exec.Config{}, func(f fixture) {
			helper = filepath.Join(f.ws, "helper")
			require.NoError(t, os.WriteFile(helper, bin, 0o755))
		})
		r, err := execsandbox.New(execsandbox.Config{}, exec.Config{Helper: helper}, w.pol)
		require.NoError(t, err)
		w.r = r
		replace(helper)
		res, err := w.try(t.Context(), sandbox.WorkspaceWrite, "echo ok > "+w.ws+"/ran; echo ok", time.Minute)
		return w, res, err
	}
	t.Run("renamed over between New and the first command", func(t *testing.T) {
		w, res, err := replaced(t, func(helper string) {
			tmp := helper + ".new"
			require.NoError(t, os.WriteFile(tmp, evil, 0o755))
			require.NoError(t, os.Rename(tmp, helper))
		})
		require.NoError(t, err)
		assert.Equal(t, "ok\n", res.Stdout.Text, res.Stderr.Text)
		assert.NotContains(t, res.Stderr.Text, "EVIL-STAGE")
		assert.FileExists(t, filepath.Join(w.ws, "ran"))
	})
	t.Run("out of scope: written in place by another host process before the first command", func(t *testing.T) {
		_, res, err := replaced(t, func(helper string) {
			require.NoError(t, os.WriteFile(helper, evil, 0o755))
		})
		t.Logf("err %v; exit %d stdout %q stderr %.200q: the sealed copy is taken from the file New opened, at the first command, "+
			"so a same-inode rewrite before it runs (the server's own user's processes, who could equally ptrace the server, are outside the threat model)",
			err, res.ExitCode, res.Stdout.Text, res.Stderr.Text)
	})
	t.Run("no writable handle on any program from inside", func(t *testing.T) {
		w := newWorld(t, o, exec.Config{}, nil)
		script := `import os, stat
out = []
for d in ["/proc/self/fd", "/proc/1/fd", "/proc/%d/fd" % os.getppid()]:
    try:
        names = sorted(os.listdir(d), key=int)
    except OSError as e:
        out.append("%s LIST-FAIL %s" % (d, e.errno)); continue
    for n in names:
        p = d + "/" + n
        try:
            tgt = os.readlink(p)
        except OSError as e:
            tgt = "?%d" % e.errno
        for flag, fn in ((os.O_WRONLY, "W"), (os.O_RDWR, "RW")):
            try:
                fd = os.open(p, flag | os.O_NONBLOCK)
                out.append("%s %s %s OPEN" % (p, tgt, fn)); os.close(fd)
            except OSError as e:
                out.append("%s %s %s FAIL %d" % (p, tgt, fn, e.errno))
for p in ["/proc/self/exe", "/proc/1/exe"]:
    try:
        fd = os.open(p, os.O_RDWR); out.append(p + " OPEN-RW"); os.close(fd)
    except OSError as e:
        out.append("%s %s FAIL %d" % (p, os.readlink(p) if os.path.exists(p) else "?", e.errno))
print("\n".join(out))
`
		res := w.run(t, sandbox.WorkspaceWrite, "ls -l /proc/self/fd; exec "+pyCommand(t, script))
		t.Logf("%s", res.Stdout.Text)
		for l := range strings.SplitSeq(res.Stdout.Text, "\n") {
			if strings.HasSuffix(l, "OPEN") || strings.HasSuffix(l, "OPEN-RW") {
				f := strings.Fields(l)
				// The command's own pipes and terminal-free std streams are its own.
				if len(f) >= 2 && (strings.HasPrefix(f[0], "/proc/self/fd/") || strings.Contains(f[1], "/dev/null")) {
					continue
				}
				assert.NotContains(t, l, "memfd:", "a writable handle on the sealed stage")
				assert.NotContains(t, l, "bwrap", "a writable handle on bwrap")
				t.Logf("writable from inside: %s", l)
			}
		}
		// The shell's descriptors: 0, 1, 2 and ls's own directory.
		for l := range strings.SplitSeq(res.Stdout.Text, "\n") {
			f := strings.Fields(l)
			if len(f) > 2 && f[len(f)-2] == "->" {
				n, _ := strconv.Atoi(f[len(f)-3])
				assert.LessOrEqual(t, n, 3, "the shell holds descriptor %s", l)
			}
		}
	})
	t.Run("a forged status through the init's status pipe", func(t *testing.T) {
		w := newWorld(t, o, exec.Config{}, nil)
		forge := `for f in /proc/1/fd/*; do printf '{"started":false,"error":"the sandbox did not start: FORGED"}\n' 2>/dev/null > "$f" && echo "wrote $f"; done; touch ` + w.ws + `/ran2`
		res, err := w.try(t.Context(), sandbox.WorkspaceWrite, forge, time.Minute)
		t.Logf("err %v stdout %q", err, res.Stdout.Text)
		if assert.FileExists(t, filepath.Join(w.ws, "ran2")) {
			assert.NoError(t, err, "the result says the command was not run, yet it ran: a forged status")
		}
	})
}

// TestAttack2Sockets (4): with the default (no network, no Unix sockets) and
// with Unix sockets allowed, what a command can open and reach.
func TestAttack2Sockets(t *testing.T) {
	o := primaryOwner()
	marker := uniqueMarker()
	abstract := "\x00harness-test-" + marker
	ln, err := net.Listen("unix", abstract)
	require.NoError(t, err)
	defer ln.Close() //nolint:errcheck // test listener
	accepted := make(chan string, 16)
	var serving sync.WaitGroup
	serve := func(l net.Listener) {
		defer serving.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			accepted <- l.Addr().String() + ":" + line
			_ = c.Close()
		}
	}
	serving.Add(1)
	go serve(ln)
	dir, err := os.MkdirTemp("/var/tmp", "attack2-")
	require.NoError(t, err)
	defer os.RemoveAll(dir) //nolint:errcheck // test directory
	require.NoError(t, os.Chmod(dir, 0o755))
	pathSock := filepath.Join(dir, "s")
	pl, err := net.Listen("unix", pathSock)
	require.NoError(t, err)
	defer pl.Close() //nolint:errcheck // test listener
	require.NoError(t, os.Chmod(pathSock, 0o777))
	serving.Add(1)
	go serve(pl)

	script := pySyscalls + `import socket
def t(name, fam, typ, proto=0):
    try:
        s = socket.socket(fam, typ, proto); print(name, "OK"); s.close()
    except OSError as e:
        print(name, "FAIL", errno.errorcode.get(e.errno, e.errno))
t("vsock", 40, socket.SOCK_STREAM)
t("packet", 17, socket.SOCK_RAW)
t("alg", 38, socket.SOCK_SEQPACKET)
t("bluetooth", 31, socket.SOCK_RAW, 1)
t("can", 29, socket.SOCK_RAW, 1)
t("xdp", 44, socket.SOCK_RAW)
t("key", 15, socket.SOCK_RAW, 2)
t("tipc", 30, socket.SOCK_RDM)
t("kcm", 41, socket.SOCK_DGRAM)
t("qipcrtr", 42, socket.SOCK_DGRAM)
t("rds", 21, socket.SOCK_SEQPACKET)
t("smc", 43, socket.SOCK_STREAM)
t("raw-inet", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
t("ping-inet", socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
t("netlink-route", socket.AF_NETLINK, socket.SOCK_RAW, 0)
t("netlink-audit", socket.AF_NETLINK, socket.SOCK_RAW, 9)
t("unix", socket.AF_UNIX, socket.SOCK_STREAM)
try:
    a, b = socket.socketpair(); print("socketpair OK")
except OSError as e:
    print("socketpair FAIL", errno.errorcode.get(e.errno))
for name, addr in (("abstract", "\0harness-test-MARKER"), ("pathname", "PATHSOCK")):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(2); s.connect(addr); s.sendall(b"from-sandbox\n"); print("connect-" + name, "OK")
    except OSError as e:
        print("connect-" + name, "FAIL", errno.errorcode.get(e.errno, e.errno))
sc("io_uring_setup", 425, 1, ctypes.create_string_buffer(120))
import os
print("interfaces", sorted(os.listdir("/sys/class/net")))
`
	script = strings.ReplaceAll(strings.ReplaceAll(script, "MARKER", marker), "PATHSOCK", pathSock)
	for _, c := range []struct {
		name string
		cfg  execsandbox.Config
	}{{"default", execsandbox.Config{}}, {"unix sockets allowed", execsandbox.Config{UnixSockets: true}}} {
		t.Run(c.name, func(t *testing.T) {
			w := withRunner(t, newWorld(t, o, exec.Config{}, nil), c.cfg)
			cmd := pyCommand(t, script) + "; ip -o link 2>&1 | cut -d' ' -f2; ip link add attack2 type dummy 2>&1; echo ip-link-add=$?"
			res := w.run(t, sandbox.WorkspaceWrite, cmd)
			t.Logf("exit %d\n%s\nstderr %.300q", res.ExitCode, res.Stdout.Text, res.Stderr.Text)
			got := map[string]string{}
			for l := range strings.SplitSeq(res.Stdout.Text, "\n") {
				if f := strings.Fields(l); len(f) >= 2 {
					got[f[0]] = f[1]
				}
			}
			for _, fam := range []string{"vsock", "packet", "alg", "bluetooth", "can", "xdp", "key", "tipc", "kcm", "qipcrtr", "rds", "smc", "raw-inet", "ping-inet", "io_uring_setup", "connect-abstract"} {
				assert.Equal(t, "FAIL", got[fam], "%s is open to a command", fam)
			}
			assert.Equal(t, "OK", got["socketpair"])
			// netlink sockets open inside the command's own network
			// namespace (audit answers only in the initial one).
			assert.NotContains(t, res.Stdout.Text, "ip-link-add=0")
			if !c.cfg.UnixSockets {
				// The command may make sockets of its own (issue 36);
				// the host's stays out of reach (masked, or refused by
				// Landlock ABI 9).
				assert.Equal(t, "OK", got["unix"])
				assert.Equal(t, "FAIL", got["connect-pathname"])
			} else if got["connect-pathname"] == "OK" {
				t.Logf("documented (README: pathname Unix sockets are all or nothing with --unix-sockets allow; Landlock ABI %d < 9 cannot scope them): "+
					"a command connected to %s, outside every writable root", subproc.Probe().LandlockABI, pathSock)
			}
		})
	}
	// Both servers end before the channel closes: no send races it.
	_ = ln.Close()
	_ = pl.Close()
	serving.Wait()
	close(accepted)
	for a := range accepted {
		assert.NotContains(t, a, "harness-test", "the host's abstract socket was reached: %q", a)
		t.Logf("host listener accepted: %q", a)
	}
}

// TestAttack2Limits (5): the cgroup holds every process of a command, the
// memory cap is the tree's, threads count against the pids cap, and Close
// leaves no group behind.
func TestAttack2Limits(t *testing.T) {
	o := primaryOwner()
	cgroups := os.Geteuid() == 0
	t.Run("no process lands outside its group", func(t *testing.T) {
		if !cgroups {
			t.Skip("cgroups need root here (cgroup v1)")
		}
		w := withRunner(t, newWorld(t, o, exec.Config{}, nil), execsandbox.Config{})
		marker := uniqueMarker()
		done := make(chan exec.Result, 1)
		go func() {
			res, _ := w.try(context.Background(), sandbox.WorkspaceWrite,
				"sleep 3."+marker+" & (sleep 3."+marker+" &) ; setsid sleep 3."+marker+" & cat /proc/self/cgroup; wait", time.Minute)
			done <- res
		}()
		var pids []int
		require.Eventually(t, func() bool { pids = liveProcesses(marker); return len(pids) >= 3 }, 20*time.Second, 5*time.Millisecond)
		for _, pid := range pids {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
			if err != nil || exiting(pid) {
				// An exiting task shows "/" in every cgroup v1
				// hierarchy (the kernel's proc_cgroup_show): the
				// subshell of "( ... &)" ends at once.
				continue
			}
			for l := range strings.SplitSeq(string(b), "\n") {
				if f := strings.SplitN(l, ":", 3); len(f) == 3 && (f[1] == "memory" || f[1] == "pids") {
					assert.Contains(t, f[2], fmt.Sprintf("/harness-%d/cmd-", os.Getpid()), "pid %d is outside its command's %s group", pid, f[1])
				}
			}
		}
		res := <-done
		t.Logf("inside: %s", res.Stdout.Text)
	})
	t.Run("the memory cap is the tree's, not each process's", func(t *testing.T) {
		w := withRunner(t, newWorld(t, o, exec.Config{}, nil), execsandbox.Config{Memory: 256 << 20, Pids: 64})
		hold := `import sys, time
b = bytearray(100 << 20)
for i in range(0, len(b), 4096): b[i] = 1
print("held", flush=True); time.sleep(3); print("kept", flush=True)`
		cmd := "for i in 1 2 3 4 5 6; do " + pyCommand(t, hold) + " & done; wait"
		res, err := w.try(t.Context(), sandbox.WorkspaceWrite, cmd, time.Minute)
		require.NoError(t, err)
		// A process the OOM killer ends after it printed "held" lets
		// another one hold: those that kept their 100 MiB through the
		// whole 3 s (all started together) held it at the same time.
		held := strings.Count(res.Stdout.Text, "kept")
		t.Logf("%d of 6 processes kept 100 MiB through 3 s under a 256 MiB cap; stdout %q; stderr %.200q", held, res.Stdout.Text, res.Stderr.Text)
		if cgroups {
			assert.LessOrEqual(t, held, 2, "the tree kept %d MiB under a 256 MiB cap", held*100)
		} else {
			t.Logf("documented: without a cgroup (uid %d here) the memory cap is per process (RLIMIT_DATA)", os.Geteuid())
		}
	})
	t.Run("threads count against the pids cap", func(t *testing.T) {
		w := withRunner(t, newWorld(t, o, exec.Config{}, nil), execsandbox.Config{Pids: 32})
		script := `import threading, time
n = 0
ev = threading.Event()
try:
    for i in range(200):
        threading.Thread(target=ev.wait, daemon=True).start(); n += 1
except RuntimeError:
    pass
print("threads", n); ev.set()`
		res := w.run(t, sandbox.WorkspaceWrite, pyCommand(t, script))
		t.Logf("%s stderr %.200q", res.Stdout.Text, res.Stderr.Text)
		var n int
		_, _ = fmt.Sscanf(res.Stdout.Text, "threads %d", &n)
		assert.Less(t, n, 32, "a command started %d threads under a cap of 32", n)
	})
	t.Run("no group is left after Close", func(t *testing.T) {
		if !cgroups {
			t.Skip("cgroups need root here (cgroup v1)")
		}
		w := newWorld(t, o, exec.Config{}, nil)
		p := startPeer(t, "close", w.ws, "true")
		out := p.wait(t)
		t.Logf("peer: %s", out)
		assert.Contains(t, out, "PEER close=<nil>")
		assert.NotContains(t, out, "LEFT", "cgroups left after Close")
		pid := p.cmd.Process.Pid
		for _, h := range []string{"memory", "pids"} {
			matches, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/%s/*/*/harness-%d", h, pid))
			more, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/%s/harness-%d", h, pid))
			assert.Empty(t, append(matches, more...), "groups of the peer left in %s", h)
		}
	})
}

// TestAttack2Lifetime (6): a command's tree ends with the call, whatever it
// closes, writes or ignores.
func TestAttack2Lifetime(t *testing.T) {
	o := primaryOwner()
	w := newWorld(t, o, exec.Config{}, nil)
	t.Run("closes stdout and stderr and keeps running", func(t *testing.T) {
		marker := uniqueMarker()
		late := filepath.Join(w.ws, "late-"+marker)
		start := time.Now()
		res, err := w.try(t.Context(), sandbox.WorkspaceWrite,
			"exec >&- 2>&- </dev/null; (sleep 8."+marker+"; touch "+late+") & (setsid sleep 8."+marker+" &); true", 30*time.Second)
		require.NoError(t, err)
		t.Logf("returned in %v, exit %d", time.Since(start), res.ExitCode)
		// The background sleeps 8 s: a call that waited for it takes that
		// long; one that did not takes a start (2 s was within reach of a
		// loaded machine's start under the race detector).
		assert.Less(t, time.Since(start), 6*time.Second, "the call waited for the background")
		assert.Empty(t, liveProcesses(marker))
		time.Sleep(9 * time.Second)
		assert.NoFileExists(t, late, "a background process outlived the call")
		assert.Empty(t, liveProcesses(marker))
	})
	t.Run("100 MB of output", func(t *testing.T) {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := w.try(t.Context(), sandbox.WorkspaceWrite, "head -c 100000000 /dev/zero | tr '\\0' a; head -c 100000000 /dev/zero >&2", time.Minute)
		require.NoError(t, err)
		runtime.ReadMemStats(&after)
		t.Logf("stdout %d bytes kept of %d, stderr %d of %d; heap %d -> %d MiB", len(res.Stdout.Text), res.Stdout.Bytes,
			len(res.Stderr.Text), res.Stderr.Bytes, before.HeapAlloc>>20, after.HeapAlloc>>20)
		assert.Equal(t, int64(100_000_000), res.Stdout.Bytes)
		assert.True(t, res.Stdout.Truncated)
		assert.Less(t, len(res.Stdout.Text), 200<<10)
		assert.Less(t, len(res.Stderr.Text), 200<<10)
		assert.Less(t, int64(after.TotalAlloc-before.TotalAlloc), int64(64<<20), "the server allocated per byte of output")
	})
	t.Run("ignores SIGTERM past its timeout", func(t *testing.T) {
		marker := uniqueMarker()
		start := time.Now()
		res, err := w.try(t.Context(), sandbox.WorkspaceWrite, "trap '' TERM INT HUP; sleep 60."+marker+" & setsid sh -c 'trap \"\" TERM; sleep 61."+marker+"' & wait", time.Second)
		require.NoError(t, err)
		assert.True(t, res.TimedOut)
		assert.Less(t, time.Since(start), 8*time.Second)
		assert.Empty(t, liveProcesses(marker))
	})
	t.Run("the server's context cancelled mid-command", func(t *testing.T) {
		marker := uniqueMarker()
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		res, err := w.try(ctx, sandbox.WorkspaceWrite,
			"(setsid nohup sleep 60."+marker+" >/dev/null 2>&1 &); ( ( sleep 61."+marker+" & ) & ); sleep 62."+marker, time.Minute)
		require.NoError(t, err)
		assert.True(t, res.Cancelled)
		assert.Empty(t, liveProcesses(marker), "processes of a cancelled command survive")
	})
}

// TestAttack2Search (7): the protected-path search on trees built to hurt
// it.
func TestAttack2Search(t *testing.T) {
	longTest(t)
	o := primaryOwner()
	// 200,000 directories under HARNESS_SOAK=1 (make soak), 20,000 in
	// make test: the same shape (a .git in the last directory made), a
	// tenth of the walk.
	parents := 20
	if os.Getenv("HARNESS_SOAK") == "1" {
		parents = 200
	}
	t.Run(strconv.Itoa(parents)+",000 directories", func(t *testing.T) {
		start := time.Now()
		last := strconv.Itoa(parents-1) + "/999"
		w := newWorld(t, o, exec.Config{}, func(f fixture) {
			for i := range parents {
				d := filepath.Join(f.ws, "t", strconv.Itoa(i))
				require.NoError(t, os.MkdirAll(d, 0o755))
				for j := range 1000 {
					require.NoError(t, unix.Mkdir(filepath.Join(d, strconv.Itoa(j)), 0o755))
				}
			}
			writeTree(t, f.ws, map[string]string{"t/" + last + "/.git/config": "[core]\n"})
		})
		t.Logf("made in %v", time.Since(start))
		cfg := filepath.Join(w.ws, "t/"+last+"/.git/config")
		before := protectedStates(t, []string{cfg})
		for i := range 2 {
			start = time.Now()
			res, err := w.try(t.Context(), sandbox.WorkspaceWrite, evilConfig+" >> "+cfg, time.Minute)
			t.Logf("command %d: %v, err %v, exit %d", i+1, time.Since(start), err, res.ExitCode)
			if err == nil {
				assert.NotEqual(t, 0, res.ExitCode)
			}
		}
		assertUnchanged(t, before, "deep .git in "+strconv.Itoa(parents)+",000 directories")
	})
	t.Run("symlink loops", func(t *testing.T) {
		w := newWorld(t, o, exec.Config{}, func(f fixture) {
			require.NoError(t, os.Symlink("l2", filepath.Join(f.ws, "l1")))
			require.NoError(t, os.Symlink("l1", filepath.Join(f.ws, "l2")))
			require.NoError(t, os.Symlink(".", filepath.Join(f.ws, "self")))
			require.NoError(t, os.MkdirAll(filepath.Join(f.ws, "d/.git"), 0o755))
			require.NoError(t, os.Symlink("..", filepath.Join(f.ws, "d/up")))
		})
		start := time.Now()
		res := w.run(t, sandbox.WorkspaceWrite, "touch self/self/self/d/.git/x; touch d/up/d/up/d/.git/y; ls -d d/.git/*")
		t.Logf("%v exit %d stderr %.200q", time.Since(start), res.ExitCode, res.Stderr.Text)
		assert.Less(t, time.Since(start), 10*time.Second)
		assert.NoFileExists(t, filepath.Join(w.ws, "d/.git/x"))
		assert.NoFileExists(t, filepath.Join(w.ws, "d/.git/y"))
	})
	t.Run("a directory of mode 000", func(t *testing.T) {
		w := newWorld(t, o, exec.Config{}, func(f fixture) {
			require.NoError(t, os.MkdirAll(filepath.Join(f.ws, "locked/in"), 0o755))
		})
		locked := filepath.Join(w.ws, "locked")
		require.NoError(t, os.Chmod(locked, 0))
		t.Cleanup(func() { _ = os.Chmod(locked, 0o755) })
		_, err := w.try(t.Context(), sandbox.WorkspaceWrite, "true", time.Minute)
		if os.Geteuid() == 0 {
			t.Logf("root server (reads every directory): err %v", err)
			return
		}
		var ee *exec.Error
		if assert.ErrorAs(t, err, &ee) {
			t.Logf("refusal: %s", ee.Message)
			assert.EqualValues(t, exec.CodeUnavailable, ee.Code)
			assert.Contains(t, ee.Message, locked, "the refusal names the directory")
		}
	})
	t.Run("another user's .git in a temp root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give a directory to another user")
		}
		w := newWorld(t, o, exec.Config{}, nil)
		tmp := filepath.Join(filepath.Dir(w.ws), "tmp")
		require.NoError(t, os.Mkdir(tmp, 0o777))
		require.NoError(t, os.Chmod(tmp, os.ModeSticky|0o777))
		writeTree(t, tmp, map[string]string{"theirs/.git/config": "[core]\n", "mine/.git/config": "[core]\n"})
		require.NoError(t, chownTree(filepath.Join(tmp, "theirs"), 65534))
		require.NoError(t, chownTree(filepath.Join(tmp, "mine"), ordinaryUID))
		require.NoError(t, os.Chmod(filepath.Join(tmp, "theirs/.git/config"), 0o666))
		pol, err := sandboxpolicy.New(sandboxpolicy.Config{WorkspaceRoot: w.ws, TempRoots: []string{tmp}})
		require.NoError(t, err)
		w.pol = pol
		w.r, err = execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
		require.NoError(t, err)
		before := protectedStates(t, []string{filepath.Join(tmp, "mine/.git/config")})
		res := w.run(t, sandbox.WorkspaceWrite, "grep -c '"+tmp+"/theirs' /proc/self/mountinfo; grep -c '"+tmp+"/mine/.git' /proc/self/mountinfo; "+
			evilConfig+" >> "+tmp+"/mine/.git/config")
		t.Logf("mounts (theirs, mine): %q stderr %.200q", res.Stdout.Text, res.Stderr.Text)
		assert.True(t, strings.HasPrefix(res.Stdout.Text, "0\n1\n"), "another user's .git is ignored, the owner's is read-only")
		assertUnchanged(t, before, "the owner's .git in a temp root")
	})
}

// TestAttack2Escape (8): whatever else hurts the host user's next git
// command or reaches out.
func TestAttack2Escape(t *testing.T) {
	o := primaryOwner()
	t.Run("a stale mount point from a killed server", func(t *testing.T) {
		// A server killed mid-command leaves bubblewrap's mount point for
		// the reserved .git on disk; the next server finds an empty .git.
		w := newWorld(t, o, exec.Config{}, nil)
		peer := startPeer(t, "run", w.ws, "sleep 30")
		gitPath := filepath.Join(w.ws, ".git")
		require.Eventually(t, func() bool { _, err := os.Lstat(gitPath); return err == nil }, 20*time.Second, 10*time.Millisecond)
		require.NoError(t, peer.cmd.Process.Kill())
		_ = peer.wait(t)
		_, err := os.Lstat(gitPath)
		t.Logf("after the server's SIGKILL, %s left on disk: %v", gitPath, err == nil)
		res := w.run(t, sandbox.WorkspaceWrite, "mkdir -p .git/hooks; "+evilConfig+" > .git/config && echo WROTE; rmdir .git; mv .git x")
		t.Logf("next command: exit %d stdout %q stderr %.200q", res.ExitCode, res.Stdout.Text, res.Stderr.Text)
		assert.NotContains(t, res.Stdout.Text, "WROTE")
		_, err = os.Lstat(filepath.Join(gitPath, "config"))
		assert.ErrorIs(t, err, fs.ErrNotExist)
		_ = os.Remove(gitPath)
	})
	t.Run("unix sockets allowed: the host user's pathname sockets", func(t *testing.T) {
		// With --unix-sockets allow and Landlock ABI < 9, any socket the
		// user can reach is connectable: the session bus, ssh-agent.
		if subproc.Probe().LandlockABI >= 9 {
			t.Skip("Landlock scopes pathname sockets here")
		}
		t.Log("documented in README (all or nothing); see TestAttack2Sockets/unix_sockets_allowed")
	})
	t.Run("a workdir that is a symlink into .git", func(t *testing.T) {
		w := newWorld(t, o, exec.Config{}, func(f fixture) {
			writeTree(t, f.ws, map[string]string{"r/.git/config": "[core]\n"})
			require.NoError(t, os.Symlink("r/.git", filepath.Join(f.ws, "wd")))
		})
		before := protectedStates(t, []string{filepath.Join(w.ws, "r/.git/config")})
		res, err := w.r.Run(t.Context(), exec.Request{
			Command: evilConfig + " >> config", Workdir: filepath.Join(w.ws, "wd"), Timeout: time.Minute,
			Policy: carried(w.pol, sandbox.WorkspaceWrite, w.ws),
		})
		t.Logf("err %v exit %d", err, res.ExitCode)
		assertUnchanged(t, before, "workdir through a symlink into .git")
	})
	t.Run("a .git file turned into a gitdir by its own command", func(t *testing.T) {
		// The command writes a gitdir in the workspace and a .git file
		// naming it in a new directory: not protected (created during the
		// command, documented); the host user's git there uses its config.
		w := newWorld(t, o, exec.Config{}, nil)
		res := w.run(t, sandbox.WorkspaceWrite, "git init -q --bare gd && mkdir sub && echo \"gitdir: $PWD/gd\" > sub/.git && "+evilConfig+" >> gd/config")
		t.Logf("exit %d; documented: new repositories made by a command are the command's", res.ExitCode)
	})
}
