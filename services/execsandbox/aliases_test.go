//go:build linux

package execsandbox_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	fixtures "github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// aliasWrite appends a core.fsmonitor through each of names, saying WROTE
// for each that took it.
func aliasWrite(names ...string) string {
	c := ""
	for _, n := range names {
		c += "printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> " + n + " && echo WROTE " + n + "; "
	}
	return c + "true"
}

// TestProtectedFileHardLinked (the attack review of ff9821f, its second and
// third older findings): a protected file's read-only bind covers its path
// only, so another name of it (a hard link) in a writable root would let a
// command write it: a user's hard-linked dotfiles, or a `.git/config` a
// command linked while the host's rewrite left it writable, for every later
// command. Each other name in the writable roots is protected as the file
// is: beside it in the workspace, inside the split git directory (writable
// but for its members), in a nested directory renamed between two commands
// (the cached names no longer hold), and under the Landlock isolation.
// The bytes on disk stay the host's.
func TestProtectedFileHardLinked(t *testing.T) {
	w := gitRepoWorld(t, primaryOwner(), sandbox.VCSCommit)
	config := filepath.Join(w.ws, ".git", "config")
	before := readFile(t, config)
	link := func(name string) {
		t.Helper()
		p := filepath.Join(w.ws, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		if os.Geteuid() == 0 && w.uid != 0 {
			require.NoError(t, chownTo(filepath.Dir(p), w.uid))
		}
		require.NoError(t, os.Link(config, p))
	}
	link("alias")
	link(".git/alias")
	link("d/e/alias")
	res := w.run(t, sandbox.WorkspaceWrite, aliasWrite("alias", ".git/alias", "d/e/alias", ".git/config"))
	assert.NotContains(t, res.Stdout.Text, "WROTE", res.Stderr.Text)
	assert.Equal(t, before, readFile(t, config))

	// The directory holding a name renamed: the file's ctime is as it
	// was, the cached name is not there any more.
	require.NoError(t, os.Rename(filepath.Join(w.ws, "d"), filepath.Join(w.ws, "moved")))
	res = w.run(t, sandbox.WorkspaceWrite, aliasWrite("moved/e/alias"))
	assert.NotContains(t, res.Stdout.Text, "WROTE", res.Stderr.Text)
	assert.Equal(t, before, readFile(t, config))

	// One more link made on the host: found by the next command.
	link("later")
	res = w.run(t, sandbox.WorkspaceWrite, aliasWrite("later", "moved/e/alias"))
	assert.NotContains(t, res.Stdout.Text, "WROTE", res.Stderr.Text)
	assert.Equal(t, before, readFile(t, config))

	t.Run("landlock isolation", func(t *testing.T) {
		if !subproc.MountNamespace() || os.Geteuid() != 0 {
			t.Skip("--exec-isolation landlock carves out protected paths only as root with a mount namespace (TestVCSLandlockIsolation)")
		}
		ll, err := execsandbox.New(execsandbox.Config{Isolation: execsandbox.IsolationLandlock}, exec.Config{}, w.pol)
		require.NoError(t, err)
		res, err := ll.Run(t.Context(), exec.Request{Command: aliasWrite("alias", "later"), Workdir: w.ws, Timeout: time.Minute, Policy: carried(w.pol, sandbox.WorkspaceWrite, w.ws)})
		require.NoError(t, err)
		assert.NotContains(t, res.Stdout.Text, "WROTE", res.Stderr.Text)
		assert.Equal(t, before, readFile(t, config))
	})
}

// waitFor polls for path to exist, up to d.
func waitFor(t *testing.T, path string, d time.Duration) bool {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Lstat(path); err == nil {
			return true
		}
	}
	return false
}

// TestAliasCacheSymlinkedName (the attack review of b155b40): the alias cache
// re-checks each cached name with lstat, which follows a symlink in any
// directory above the name. A command running while the host's git
// rewrote .git/config (the documented window) links the new file at
// .git/y/q/config (a link cannot leave the .git mount: EXDEV); the next command's search caches that name. The first
// command, still running (its view has no mount on .git/y), then renames
// .git/y aside and makes .git/y/q a symlink to ..: the cached name now lstats to
// .git/config itself (same inode; the file's ctime and link count are
// unchanged), so the cache is taken as fresh, and the real other name
// (.git/hidden/q/config) is writable to every later command.
func TestAliasCacheSymlinkedName(t *testing.T) {
	w := gitRepoWorld(t, primaryOwner(), sandbox.VCSCommit)
	config := filepath.Join(w.ws, ".git", "config")

	cmd1 := `touch started
until printf '' >> .git/config 2>/dev/null; do sleep 0.1; done
mkdir -p .git/y/q && ln .git/config .git/y/q/config && touch linked
until [ -e go ]; do sleep 0.1; done
mv .git/y .git/hidden && mkdir .git/y && ln -s .. .git/y/q && echo REARRANGED && ls -l .git/y/q .git/hidden/q`
	var wg sync.WaitGroup
	var res1 exec.Result
	var err1 error
	wg.Go(func() {
		res1, err1 = w.try(t.Context(), sandbox.WorkspaceWrite, cmd1, 2*time.Minute)
	})
	require.True(t, waitFor(t, filepath.Join(w.ws, "started"), time.Minute), "command 1 did not start")
	// The host's git rewrites .git/config (config.lock renamed over it).
	require.NoError(t, asOwner(w, w.ws, w.outside, "git", "config", "x.y", "host"))
	require.True(t, waitFor(t, filepath.Join(w.ws, "linked"), time.Minute), "command 1 did not link")
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(config, &st))
	t.Logf(".git/config after the link: ino %d nlink %d", st.Ino, st.Nlink)

	// Command 2 (any command): its search finds .git/y/q/config and
	// caches it. Command 1 rearranges while command 2 still runs (no
	// search then: the one after command 2 ends would otherwise race it).
	res2 := w.run(t, sandbox.WorkspaceWrite, aliasWrite(".git/y/q/config")+"; touch go; sleep 3")
	assert.NotContains(t, res2.Stdout.Text, "WROTE", res2.Stderr.Text)
	require.NoError(t, unix.Lstat(config, &st))
	t.Logf("after command 2: ctime %v nlink %d", st.Ctim, st.Nlink)
	wg.Wait()
	require.NoError(t, err1)
	require.NoError(t, unix.Lstat(config, &st))
	t.Logf("after command 1: ctime %v nlink %d", st.Ctim, st.Nlink)
	t.Logf("command 1: %s %s", res1.Stdout.Text, res1.Stderr.Text)
	require.Contains(t, res1.Stdout.Text, "REARRANGED")

	before := readFile(t, config)
	res3 := w.run(t, sandbox.WorkspaceWrite, aliasWrite(".git/hidden/q/config")+"; grep -E 'hidden|/y' /proc/self/mountinfo | cut -d' ' -f4-6; stat -c '%n %i %h %Z' .git/config .git/hidden/q/config")
	t.Logf("command 3: %s %s", res3.Stdout.Text, res3.Stderr.Text)
	assert.NotContains(t, res3.Stdout.Text, "WROTE", "a later command wrote .git/config through the other name the stale cache left out")
	after := readFile(t, config)
	assert.Equal(t, before, after, ".git/config on disk changed")
	if strings.Contains(after, "fsmonitor") {
		t.Logf(".git/config on disk now:\n%s", after)
	}
}

// TestProtectedFileOfManyLinks (the attack review of b155b40): a protected
// file of more than 64 other names in the writable roots refuses the
// command, naming the file and its links (each name would be a bind of
// the view), instead of every command's view growing past bubblewrap's
// limit; the bytes on disk stay the host's.
func TestProtectedFileOfManyLinks(t *testing.T) {
	w := gitRepoWorld(t, primaryOwner(), sandbox.VCSCommit)
	config := filepath.Join(w.ws, ".git", "config")
	before := readFile(t, config)
	require.NoError(t, os.Mkdir(filepath.Join(w.ws, "many"), 0o755))
	for i := range 70 {
		require.NoError(t, os.Link(config, filepath.Join(w.ws, "many", strconv.Itoa(i))))
	}
	res, err := w.try(t.Context(), sandbox.WorkspaceWrite, aliasWrite("many/3"), time.Minute)
	require.Error(t, err)
	assert.Contains(t, err.Error(), config)
	assert.Contains(t, err.Error(), "71 links")
	assert.NotContains(t, res.Stdout.Text, "WROTE")
	assert.Equal(t, before, readFile(t, config))
}

// TestAliasLinkRoutesHeld (the attack review of b155b40): a command cannot make a
// second name of a bound protected file by any link route: link(2),
// linkat through /proc/self/fd with AT_SYMLINK_FOLLOW, linkat
// AT_EMPTY_PATH on an O_RDONLY descriptor, into the workspace and into
// .git (all EXDEV or EPERM/ENOENT: the file is on its own read-only bind).
func TestAliasLinkRoutesHeld(t *testing.T) {
	w := gitRepoWorld(t, primaryOwner(), sandbox.VCSCommit)
	script := pySyscalls + `
import os
AT_FDCWD=-100; AT_SYMLINK_FOLLOW=0x400; AT_EMPTY_PATH=0x1000
fd = os.open(".git/config", os.O_RDONLY)
for dst in ["l1", ".git/l1"]:
    try:
        os.link(".git/config", dst); print("link", dst, "OK")
    except OSError as e: print("link", dst, "FAIL", e.errno)
    try:
        os.link("/proc/self/fd/%d" % fd, dst + "p", follow_symlinks=True); print("procfd", dst, "OK")
    except OSError as e: print("procfd", dst, "FAIL", e.errno)
    sc("emptypath " + dst, 265, fd, b"", AT_FDCWD, (dst + "e").encode(), AT_EMPTY_PATH)
`
	res := w.run(t, sandbox.WorkspaceWrite, pyCommand(t, script))
	t.Logf("%s %s", res.Stdout.Text, res.Stderr.Text)
	assert.NotContains(t, res.Stdout.Text, " OK")
	for _, n := range []string{"l1", "l1p", "l1e", ".git/l1", ".git/l1p", ".git/l1e"} {
		assert.NoFileExists(t, filepath.Join(w.ws, n))
	}
}

// homeOutsideWorld is a world of the server's user whose home, out of
// the writable roots, holds the user's ~/.bashrc (returned), with the
// workspace ws.
func homeOutsideWorld(t *testing.T) (w world, ws, bashrc string) {
	t.Helper()
	home := filepath.Join(fixtures.OutsideDir(t), "home")
	require.NoError(t, os.Mkdir(home, 0o755))
	t.Setenv("HOME", home)
	bashrc = filepath.Join(home, ".bashrc")
	require.NoError(t, os.WriteFile(bashrc, []byte("# the user's bashrc\n"), 0o644))
	o := owner{"the server's user", os.Geteuid()}
	w = newWorldWith(t, o, exec.Config{}, func(c *sandboxpolicy.Config) {
		c.Homes = []string{home}
		ws = c.WorkspaceRoot
	}, nil)
	return w, ws, bashrc
}

// TestAliasHomeDotfileOutsideRoots (the attack review of b155b40): the home is not a
// writable root; the workspace is ~/dotfiles and ~/.bashrc is a hard link
// of dotfiles/bashrc (the hard-link variant of the stow layout whose
// symlinked form is protected: linkedEntry, Via). The home's host-run
// file's other name in the workspace is protected as a name of a
// protected file is: the command cannot append to ~/.bashrc.
func TestAliasHomeDotfileOutsideRoots(t *testing.T) {
	w, ws, bashrc := homeOutsideWorld(t)
	require.NoError(t, os.Link(bashrc, filepath.Join(ws, "bashrc")))
	// The symlinked form, for comparison: protected (Via).
	require.NoError(t, os.WriteFile(filepath.Join(ws, "gitconfig"), []byte("[user]\n"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(ws, "gitconfig"), filepath.Join(filepath.Dir(bashrc), ".gitconfig")))
	res, err := w.r.Run(t.Context(), exec.Request{
		Command: "echo 'echo pwned' >> bashrc && echo WROTE-bashrc; echo '[core]' >> gitconfig && echo WROTE-gitconfig",
		Workdir: ws, Timeout: time.Minute, Policy: carried(w.pol, sandbox.WorkspaceWrite, ws),
	})
	require.NoError(t, err)
	t.Logf("%s %s", res.Stdout.Text, res.Stderr.Text)
	assert.NotContains(t, res.Stdout.Text, "WROTE-gitconfig", "the symlinked form")
	assert.NotContains(t, res.Stdout.Text, "WROTE-bashrc", "the hard-linked form")
	assert.Equal(t, "# the user's bashrc\n", readFile(t, bashrc))
}

// TestAliasNormalUse (the attack review of b155b40): a repository copied with cp -al
// (every file of it hard-linked, .git/config included) and a local clone
// beside it: commands still run git in both, and neither config is
// writable.
func TestAliasNormalUse(t *testing.T) {
	w := gitRepoWorld(t, primaryOwner(), sandbox.VCSCommit)
	require.NoError(t, asOwner(w, w.ws, w.outside, "cp", "-al", ".git", "gitbak"))
	require.NoError(t, asOwner(w, w.ws, w.outside, "mkdir", "sub"))
	require.NoError(t, asOwner(w, filepath.Join(w.ws, "sub"), w.outside, "cp", "-al", "../.git", ".git"))
	require.NoError(t, asOwner(w, w.ws, w.outside, "git", "clone", "-q", "--local", ".", "clone"))
	res := w.run(t, sandbox.WorkspaceWrite, `export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
git commit -q --allow-empty -m one && echo COMMIT-OK
(cd sub && git status --short >/dev/null && git commit -q --allow-empty -m two && echo SUB-OK)
(cd clone && git commit -q --allow-empty -m three && echo CLONE-OK)
git config x.z 1 || echo CONFIG-REFUSED
echo '[core]' >> sub/.git/config || echo SUBCONFIG-REFUSED
echo '[core]' >> gitbak/config || echo BAK-REFUSED
echo '#' >> gitbak/hooks/post-commit || echo BAKHOOK-REFUSED`)
	t.Logf("%s %s", res.Stdout.Text, res.Stderr.Text)
	for _, s := range []string{"COMMIT-OK", "SUB-OK", "CLONE-OK", "CONFIG-REFUSED", "SUBCONFIG-REFUSED", "BAK-REFUSED", "BAKHOOK-REFUSED"} {
		assert.Contains(t, res.Stdout.Text, s)
	}
}

// TestAliasInAnUnreadableDirectory (the second attack review of the other
// names): a command makes the directory holding a name mode 000, so the
// next command's walk, as an ordinary user, cannot read it; the walk was
// taken as done and that command made the directory readable again and
// appended to the user's ~/.bashrc through it. Now a directory the
// searches cannot read refuses the command, naming it; as root it is read
// and the name protected. The bytes on disk stay the user's.
func TestAliasInAnUnreadableDirectory(t *testing.T) {
	w, ws, bashrc := homeOutsideWorld(t)
	require.NoError(t, os.Mkdir(filepath.Join(ws, "dotfiles"), 0o755))
	require.NoError(t, os.Link(bashrc, filepath.Join(ws, "dotfiles", "bashrc")))
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(ws, "dotfiles"), 0o755) })
	run := func(command string) (exec.Result, error) {
		res, err := w.r.Run(t.Context(), exec.Request{Command: command, Workdir: ws, Timeout: time.Minute, Policy: carried(w.pol, sandbox.WorkspaceWrite, ws)})
		t.Logf("%q: exit %d %s %s %v", command, res.ExitCode, res.Stdout.Text, res.Stderr.Text, err)
		return res, err
	}
	res, err := run("echo 'echo pwned' >> dotfiles/bashrc && echo WROTE")
	require.NoError(t, err)
	require.NotContains(t, res.Stdout.Text, "WROTE", "control: protected")
	_, err = run("chmod 000 dotfiles && echo HIDDEN")
	require.NoError(t, err)
	res, err = run("chmod 755 dotfiles && echo 'echo pwned' >> dotfiles/bashrc && echo WROTE")
	if os.Geteuid() != 0 {
		// The protected-path search refuses it first; the walk for the
		// other names would too (TestAliasesOneDirectoryOpenAtATime).
		require.Error(t, err, "dotfiles/ could not be read")
		assert.Contains(t, err.Error(), filepath.Join(ws, "dotfiles"))
	}
	assert.NotContains(t, res.Stdout.Text, "WROTE")
	assert.Equal(t, "# the user's bashrc\n", readFile(t, bashrc), "~/.bashrc on disk changed")
}
