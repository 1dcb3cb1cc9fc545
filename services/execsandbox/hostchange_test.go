//go:build linux

package execsandbox_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// Issue 34: a process on the host that changes what the search found (git
// rewriting `.git/config`, a test suite making and removing scratch
// repositories in the temp area) must not keep commands from starting, nor
// leave what it changed writable to them.

// hostCommands is how many commands the churn tests run: 1,000 under
// HARNESS_SOAK=1 (make soak), 150 in make test (some 30 rewrites of the
// churned config meet them), 60 with -short.
func hostCommands() int {
	switch {
	case os.Getenv("HARNESS_SOAK") == "1":
		return 1000
	case testing.Short():
		return 60
	}
	return 150
}

// asOwner runs name with args on the host in dir as the world's owner (a
// root test serves an ordinary user's workspace; that user's git rewrites
// its config), with HOME at home.
func asOwner(w world, dir, home, name string, args ...string) error {
	cmd := osexec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
	if os.Geteuid() == 0 && w.uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.uid), Groups: []uint32{}}}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %v: %w: %s", name, args, err, out)
	}
	return nil
}

// hostEvents records when a process on the host changed something.
type hostEvents struct {
	mu sync.Mutex
	at []time.Time
}

func (h *hostEvents) add() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.at = append(h.at, time.Now())
}

// during returns how many of spans (the start and end of a call) had an
// event within them, and the events in all.
func (h *hostEvents) during(spans [][2]time.Time) (int, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, s := range spans {
		for _, at := range h.at {
			if !at.Before(s[0]) && !at.After(s[1]) {
				n++
				break
			}
		}
	}
	return n, len(h.at)
}

// configChurn rewrites the workspace's `.git/config` with `git config x.y
// N` as its owner, as an IDE, `git fetch` or `git branch -u` do (git writes
// config.lock and renames it over config: a new file each time), one
// rewrite after another with a pause of 200-800 ms between them, until the
// test ends; holding mu stops it between two rewrites.
type configChurn struct {
	mu sync.Mutex
	hostEvents
}

func churnConfig(t *testing.T, w world) *configChurn {
	c := &configChurn{}
	stop := make(chan struct{})
	var done sync.WaitGroup
	t.Cleanup(func() {
		close(stop)
		done.Wait()
	})
	done.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(200+rand.IntN(600)) * time.Millisecond):
			}
			c.mu.Lock()
			c.rewrite(t, w, "churn-"+strconv.Itoa(i))
			c.mu.Unlock()
		}
	})
	return c
}

// rewrite rewrites `.git/config` once (c.mu held).
func (c *configChurn) rewrite(t *testing.T, w world, value string) {
	if err := asOwner(w, w.ws, w.outside, "git", "config", "x.y", value); err != nil {
		t.Errorf("the host's git: %v", err)
		return
	}
	c.add()
}

// refusedWrite tries, in a command, to append to path (a protected file of
// the world) and reports whether it was refused: the command started,
// failed with the read-only file system, and path's bytes on disk are as
// before.
func refusedWrite(t *testing.T, w world, path string) bool {
	t.Helper()
	before := readFile(t, path)
	res, err := w.try(t.Context(), sandbox.WorkspaceWrite, "echo '# written by a command' >> "+path+" && echo WROTE", time.Minute)
	if !assert.NoError(t, err, "the command did not start") {
		return false
	}
	return assert.NotEqual(t, 0, res.ExitCode) &&
		assert.NotContains(t, res.Stdout.Text, "WROTE") &&
		assert.Contains(t, res.Stderr.Text, "Read-only file system") &&
		assert.Equal(t, before, readFile(t, path), "a command changed %s on disk", path)
}

// runAmidChurn runs n commands in w while the host changes it: nine in ten
// read `.git/config`, and must start and exit 0; every tenth tries to write
// a protected file (`.git/config`, and by turns the others given) and must
// be refused. With c (the churn of `.git/config`), such a write is tried
// between two of c's rewrites (a rewrite while a command runs takes the
// read-only mount off the file in its view, which no view can prevent:
// README.md, "When the host changes what was found"), right after one of
// its own, so its view is made after a fresh rewrite and must bind that new
// file read-only. It logs and returns how many commands started, how many
// writes were refused, and when the reading commands ran.
func runAmidChurn(t *testing.T, w world, c *configChurn, n int, protected ...string) (started, refused int, spans [][2]time.Time) {
	config := filepath.Join(w.ws, ".git", "config")
	protected = append([]string{config}, protected...)
	begin := time.Now()
	for i := range n {
		if i%10 == 9 {
			if c != nil {
				c.mu.Lock()
				c.rewrite(t, w, "before-"+strconv.Itoa(i))
			}
			if refusedWrite(t, w, protected[(i/10)%len(protected)]) {
				refused++
			}
			if c != nil {
				c.mu.Unlock()
			}
			started++ // or refusedWrite failed the test
			continue
		}
		command := "true"
		if i%2 == 0 {
			// Read through the view as it was made; the output is
			// captured and dropped. (Redirected to /dev/null, one
			// command in about 4,000 under repository churn as an
			// ordinary user got EACCES opening /dev/null for writing: an
			// open bug of its own, see the closing note.)
			command = "cat .git/config"
		}
		start := time.Now()
		res, err := w.try(t.Context(), sandbox.WorkspaceWrite, command, time.Minute)
		spans = append(spans, [2]time.Time{start, time.Now()})
		if !assert.NoError(t, err, "command %d did not start", i) {
			continue
		}
		started++
		assert.Equal(t, 0, res.ExitCode, "command %d: %s", i, res.Stderr.Text)
	}
	t.Logf("%d commands in %v: %d started and ended as they should; %d writes of protected files tried, %d refused",
		n, time.Since(begin).Round(time.Second), started, n/10, refused)
	assert.NotContains(t, readFile(t, config), "written by a command")
	return started, refused, spans
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// TestHostRewritesGitConfig (issue 34): while the host's git rewrites the
// workspace's `.git/config` again and again, every command starts and exits
// 0, and a command never writes `.git/config`.
func TestHostRewritesGitConfig(t *testing.T) {
	longTest(t)
	w := gitRepoWorld(t, primaryOwner(), sandbox.VCSCommit)
	n := hostCommands()
	c := churnConfig(t, w)
	started, refused, spans := runAmidChurn(t, w, c, n)
	assert.Equal(t, n, started)
	assert.Equal(t, n/10, refused)
	hit, rewrites := c.during(spans)
	t.Logf("the host rewrote .git/config %d times; %d of the reading commands had it rewritten while they were started or ran", rewrites, hit)
}

// tempRootWorld is a git repository world whose policy has one temp root
// of its own, tmp beside the workspace (the default ones are the host's
// /tmp, where t.TempDir lies), writable by everyone as /tmp is.
func tempRootWorld(t *testing.T) (world, string) {
	var tmp string
	if _, err := osexec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w := newWorldWith(t, primaryOwner(), exec.Config{}, func(c *sandboxpolicy.Config) {
		c.VCS = sandbox.VCSCommit
		tmp = filepath.Join(filepath.Dir(c.WorkspaceRoot), "tmp")
		require.NoError(t, os.Mkdir(tmp, 0o777))
		require.NoError(t, os.Chmod(tmp, os.ModeSticky|0o777))
		c.TempRoots = []string{tmp}
	}, func(f fixture) {
		repoGit(t, f.ws, "init", "-q", "-b", "main")
		writeTree(t, f.ws, map[string]string{"a.txt": "a\n"})
		repoGit(t, f.ws, "add", "a.txt")
		repoGit(t, f.ws, "commit", "-q", "-m", "first")
	})
	return w, tmp
}

// repository makes a directory shaped like a git repository (a HEAD file,
// objects/ and refs/) at dir, with a config when config, owned by uid.
func repository(dir string, uid int, config bool) error {
	files := map[string]string{"HEAD": "ref: refs/heads/main\n"}
	if config {
		files["config"] = "[core]\n\tbare = true\n"
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	for _, d := range []string{"objects", "refs"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	if os.Geteuid() == 0 && uid != 0 {
		return chownTree(dir, uid)
	}
	return nil
}

// TestHostChurnsRepositories (issue 34): while another process of the
// workspace owner makes and removes directories shaped like git
// repositories in the temp root, a few milliseconds apart (a test suite's
// scratch repositories, each there from an instant to a few tens of
// milliseconds), every command starts and exits 0, and a command writes
// neither `.git/config` nor the config of a repository that stays in the
// temp root.
func TestHostChurnsRepositories(t *testing.T) {
	longTest(t)
	w, tmp := tempRootWorld(t)
	stable := filepath.Join(tmp, "stable")
	require.NoError(t, repository(stable, w.uid, true))
	stop := make(chan struct{})
	var churned sync.WaitGroup
	var removed hostEvents
	churned.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			dir := filepath.Join(tmp, "scratch-"+strconv.Itoa(i))
			_ = repository(dir, w.uid, i%2 == 0)
			time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
			_ = os.RemoveAll(dir)
			removed.add()
			time.Sleep(time.Duration(1+rand.IntN(3)) * time.Millisecond)
		}
	})
	n := hostCommands()
	started, refused, spans := runAmidChurn(t, w, nil, n, filepath.Join(stable, "config"))
	close(stop)
	churned.Wait()
	assert.Equal(t, n, started)
	assert.Equal(t, n/10, refused)
	hit, total := removed.during(spans)
	t.Logf("%d scratch repositories made and removed; %d of the reading commands had one removed while they were started or ran", total, hit)
}

// heldPlaceholder stops the world's next command between the search of
// its view and its start, once, and runs change there: it makes
// `.git/info/attributes` a reservation's placeholder, as another command's
// reservation leaves it, and holds it exclusively; the command, which
// reserves it again after its search, waits for it. On the first open of
// the placeholder (the command waiting for it) change runs, then the hold
// turns shared, so each start of the command reserves it again (and
// opens it twice: to reserve and to release it) and none removes it. The
// function it returns counts the opens, once the command has returned.
func heldPlaceholder(t *testing.T, w world, change func()) func() int {
	t.Helper()
	p := filepath.Join(w.ws, ".git", "info", "attributes")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, nil, 0o600))
	if err := unix.Setxattr(p, "user.harness.placeholder", []byte("1"), 0); !errors.Is(err, unix.ENOTSUP) {
		require.NoError(t, err)
	}
	require.NoError(t, os.Chmod(p, 0o444))
	if os.Geteuid() == 0 && w.uid != 0 {
		require.NoError(t, chownTo(filepath.Dir(p), w.uid))
		require.NoError(t, chownTo(p, w.uid))
	}
	hold, err := os.Open(p)
	require.NoError(t, err)
	require.NoError(t, unix.Flock(int(hold.Fd()), unix.LOCK_EX))
	ifd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	require.NoError(t, err)
	// Closes too: identical events queued one after another are merged.
	_, err = unix.InotifyAddWatch(ifd, p, unix.IN_OPEN|unix.IN_CLOSE_NOWRITE)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = unix.Close(ifd)
		_ = hold.Close()
	})
	// opened reads the opens queued, without waiting.
	opened := func() int {
		n := 0
		buf := make([]byte, 4096)
		for {
			m, err := unix.Read(ifd, buf)
			if err != nil || m <= 0 {
				return n
			}
			// struct inotify_event: wd, mask, cookie, len, name.
			for off := 0; off+unix.SizeofInotifyEvent <= m; off += unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[off+12:])) {
				if binary.NativeEndian.Uint32(buf[off+4:])&unix.IN_OPEN != 0 {
					n++
				}
			}
		}
	}
	// The opens are read as they come, not once the command returned:
	// two opens with nothing read between them merge into one event (a
	// release that keeps trying a held lock in the background keeps its
	// descriptor, so no close comes between its open and the next
	// start's).
	count := make(chan int, 1)
	stop := make(chan struct{})
	go func() {
		fds := []unix.PollFd{{Fd: int32(ifd), Events: unix.POLLIN}}
		for {
			if n, err := unix.Poll(fds, 60_000); n > 0 || !errors.Is(err, unix.EINTR) {
				break
			}
		}
		n := opened()
		if n > 0 {
			change()
		}
		_ = unix.Flock(int(hold.Fd()), unix.LOCK_SH)
		for {
			select {
			case <-stop:
				count <- n + opened()
				return
			default:
			}
			_, _ = unix.Poll(fds, 20)
			n += opened()
		}
	}()
	return func() int {
		close(stop)
		return <-count
	}
}

// TestHostChangeBetweenSearchAndStart (issue 34): what the host changes
// between the search of a command's view and its start is searched for
// again and the command started anew, bound as it is now; a protected file
// renamed over is bound read-only as the new file at the first start; what
// vanished with what held it is not searched again.
func TestHostChangeBetweenSearchAndStart(t *testing.T) {
	o := primaryOwner()
	t.Run("config renamed over", func(t *testing.T) {
		w := gitRepoWorld(t, o, sandbox.VCSCommit)
		config := filepath.Join(w.ws, ".git", "config")
		var body []byte
		opens := heldPlaceholder(t, w, func() {
			// As git writes it: config.lock, renamed over config.
			before, err := os.ReadFile(config)
			if err != nil {
				t.Error(err)
			}
			body = []byte(string(before) + "[x]\n\ty = host\n")
			lock := config + ".lock"
			if err := os.WriteFile(lock, body, 0o644); err != nil {
				t.Error(err)
			}
			if os.Geteuid() == 0 {
				_ = chownTo(lock, w.uid)
			}
			if err := os.Rename(lock, config); err != nil {
				t.Error(err)
			}
		})
		res := w.run(t, sandbox.WorkspaceWrite, "stat -c %i .git/config; echo '# written by a command' >> .git/config && echo WROTE")
		assert.Equal(t, 2, opens(), "one start: the rewritten file bound as it is (a second start would reserve the placeholder again)")
		assert.NotEqual(t, 0, res.ExitCode)
		assert.NotContains(t, res.Stdout.Text, "WROTE")
		assert.Contains(t, res.Stderr.Text, "Read-only file system")
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(config, &st))
		assert.Equal(t, strconv.FormatUint(st.Ino, 10)+"\n", res.Stdout.Text, "the view holds the rewritten file")
		assert.Equal(t, string(body), readFile(t, config))
	})
	t.Run("hooks removed", func(t *testing.T) {
		w := gitRepoWorld(t, o, sandbox.VCSCommit)
		hooks := filepath.Join(w.ws, ".git", "hooks")
		opens := heldPlaceholder(t, w, func() {
			if err := os.RemoveAll(hooks); err != nil {
				t.Error(err)
			}
		})
		res := w.run(t, sandbox.WorkspaceWrite, "mkdir -p .git/hooks && echo 'touch pwned' > .git/hooks/pre-commit && echo WROTE")
		assert.Equal(t, 4, opens(), "two starts: each reserves the placeholder and releases it")
		assert.NotEqual(t, 0, res.ExitCode)
		assert.NotContains(t, res.Stdout.Text, "WROTE")
		assert.NoDirExists(t, hooks)
	})
	t.Run("a missing member made", func(t *testing.T) {
		// objects/info/alternates comes after info/attributes: it is
		// reserved after the hold, when it is there.
		w := gitRepoWorld(t, o, sandbox.VCSCommit)
		alternates := filepath.Join(w.ws, ".git", "objects", "info", "alternates")
		opens := heldPlaceholder(t, w, func() {
			if err := os.WriteFile(alternates, []byte("../../objects\n"), 0o644); err != nil {
				t.Error(err)
			}
		})
		res := w.run(t, sandbox.WorkspaceWrite, "echo /tmp/evil >> .git/objects/info/alternates && echo WROTE")
		assert.Equal(t, 4, opens(), "two starts: each reserves the placeholder and releases it")
		assert.NotEqual(t, 0, res.ExitCode)
		assert.NotContains(t, res.Stdout.Text, "WROTE")
		assert.Equal(t, "../../objects\n", readFile(t, alternates))
	})
	t.Run("a scratch repository removed from the temp root", func(t *testing.T) {
		w, tmp := tempRootWorld(t)
		scratch := filepath.Join(tmp, "scratch")
		require.NoError(t, repository(scratch, w.uid, false))
		opens := heldPlaceholder(t, w, func() {
			if err := os.RemoveAll(scratch); err != nil {
				t.Error(err)
			}
		})
		res := w.run(t, sandbox.WorkspaceWrite, "echo ran")
		assert.Equal(t, 0, res.ExitCode, res.Stderr.Text)
		assert.Equal(t, "ran\n", res.Stdout.Text)
		assert.Equal(t, 2, opens(), "one start: it reserves the placeholder and releases it")
		assert.NoDirExists(t, scratch, "something was made for the vanished repository")
	})
}
