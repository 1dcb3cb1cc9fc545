package compose_test

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

// hostRunServer starts a server under workspace-write on a fresh workspace
// (with .config/ present, so .config/git and .config/fish can be made) and
// returns its tools, the session and the workspace.
func hostRunServer(t *testing.T, unprotect []string) (map[string]func(map[string]any) string, string) {
	t.Helper()
	return hostRunServerAt(t, unprotect, false)
}

// hostRunServerAt is hostRunServer; with home, the workspace is the
// server's $HOME (a home's own start-up files are host-run there).
func hostRunServerAt(t *testing.T, unprotect []string, home bool) (map[string]func(map[string]any) string, string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, base, "ws/.config/", "temp/")
	ws := filepath.Join(base, "ws")
	if home {
		t.Setenv("HOME", ws)
		t.Setenv("XDG_CONFIG_HOME", "")
	}
	tools, app := toolsByName(t, config.Config{
		FS: "sandbox", Exec: "sandbox", Mode: string(ww), Workspace: ws, VCS: "commit",
		TempRoots: []string{filepath.Join(base, "temp")}, Unprotect: unprotect,
		OneShot: true, LogLevel: "error", LogFormat: "json",
	})
	t.Cleanup(app.RequireStop)
	sess := session.New("s", ws)
	out := map[string]func(map[string]any) string{}
	for _, name := range []string{"write", "mkdir", "exec", "read", "edit", "move"} {
		out[name] = func(args map[string]any) string { return call(t, sess, tools[name], args).Text }
	}
	return out, ws
}

// serveAt starts a server under workspace-write on ws with the temp root
// temp, as the environment now has it ($HOME, $XDG_CONFIG_HOME), and
// returns a call of its tools in one session.
func serveAt(t *testing.T, ws, temp string) func(tool string, args map[string]any) string {
	t.Helper()
	tools, app := toolsByName(t, config.Config{
		FS: "sandbox", Exec: "sandbox", Mode: string(ww), Workspace: ws, VCS: "commit",
		TempRoots: []string{temp}, OneShot: true, LogLevel: "error", LogFormat: "json",
	})
	t.Cleanup(app.RequireStop)
	sess := session.New("s", ws)
	return func(tool string, args map[string]any) string { return call(t, sess, tools[tool], args).Text }
}

// TestHostRunFilesProtected (issues 23 and 35): every default host-run file
// (the other clients' .zed/, opencode.json, .roo/, .aider.conf.yml, ...
// among them) but a home's own (sandbox.HostRun.Home; this workspace is no
// home), missing at the top of the workspace, is refused to both families under
// workspace-write: the write tool answers with the sandbox's denial marker
// and the protected rule, the command cannot create it as a file or a
// directory (writing beneath it gives the marker), and nothing is on disk
// afterwards; --unprotect .vscode allows that one only.
func TestHostRunFilesProtected(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	call, ws := hostRunServer(t, nil)
	for _, h := range sandbox.HostRunFiles() {
		if h.Home {
			continue // this workspace is no home: TestHomeNamesOutOfAHome
		}
		t.Run(h.Name, func(t *testing.T) {
			target := filepath.Join(ws, h.Name)
			file := target
			if h.Dir {
				file = filepath.Join(target, "settings.json")
			}
			text := call["write"](map[string]any{"file_path": file, "content": "x\n"})
			assert.Contains(t, text, sandbox.DenialMarker(ww), text)
			assertAbsent(t, target)
			for _, cmd := range []string{"echo x > " + quote(target), "mkdir " + quote(target), "mkdir -p " + quote(file) + " && echo x > " + quote(file+"/f")} {
				text = call["exec"](map[string]any{"command": cmd})
				assert.NotContains(t, text, "exit code 0", cmd)
				assertAbsent(t, target)
			}
			// Writing beneath the reserved name meets the read-only
			// placeholder (EROFS): the marker says so. (Creating the name
			// itself meets an existing placeholder, EEXIST or EISDIR,
			// from which no denial is inferred.)
			assert.Contains(t, text, sandbox.DenialMarker(ww), text)
		})
	}
	t.Run("an existing host-run file is read-only to commands", func(t *testing.T) {
		fixture.Build(t, ws, ".vscode/tasks.json: old\n", "sub/.envrc: old\n")
		for _, p := range []string{".vscode/tasks.json", "sub/.envrc"} {
			text := call["exec"](map[string]any{"command": "echo x > " + quote(filepath.Join(ws, p))})
			assert.NotContains(t, text, "exit code 0")
			assert.Equal(t, "old\n", readFile(t, filepath.Join(ws, p)), text)
			text = call["write"](map[string]any{"file_path": filepath.Join(ws, p), "content": "x\n"})
			assert.Contains(t, text, sandbox.DenialMarker(ww), text)
			assert.Equal(t, "old\n", readFile(t, filepath.Join(ws, p)))
		}
	})
}

// TestHomeNamesOutOfAHome (issue 34: what a command sees of the view): at
// the top of a workspace that is no home, a home's own start-up files
// (.bashrc, .profile, .zshrc, .config/fish, ...: sandbox.HostRun.Home),
// which only a home's shells read, are not reserved: a command's `ls -A`
// lists none of them, a command may make them, and once made they are
// protected as every host-run file that exists is (read-only to the next
// command). Git's (.gitconfig, .config/git) stay reserved: a user's
// ~/.gitconfig may include a workspace's file by path (the attack review).
// The write tool refuses them all by name wherever they are.
func TestHomeNamesOutOfAHome(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	call, ws := hostRunServer(t, nil)
	text := call["exec"](map[string]any{"command": "ls -A; echo --; ls -A .config"})
	require.Contains(t, text, "exit code 0", text)
	listed := strings.Fields(text[strings.Index(text, "<stdout>")+len("<stdout>") : strings.Index(text, "</stdout>")])
	assert.Contains(t, listed, ".mcp.json", "the other host-run names are still reserved")
	for _, h := range sandbox.HostRunFiles() {
		if h.Home {
			assert.NotContains(t, listed, filepath.Base(h.Name), "reserved out of a home")
		}
	}
	assert.Contains(t, listed, ".gitconfig", "git's stay reserved")
	assert.Contains(t, listed, "git", "git's stay reserved")
	text = call["exec"](map[string]any{"command": "echo x > .bashrc && mkdir -p .config/fish && echo x > .config/fish/config.fish"})
	require.Contains(t, text, "exit code 0", text)
	assert.Equal(t, "x\n", readFile(t, filepath.Join(ws, ".bashrc")))
	assert.Equal(t, "x\n", readFile(t, filepath.Join(ws, ".config/fish/config.fish")))
	for _, cmd := range []string{"echo '[core]' > .gitconfig", "mkdir -p .config/git && echo '[core]' > .config/git/config"} {
		text = call["exec"](map[string]any{"command": cmd})
		assert.NotContains(t, text, "exit code 0", cmd+": "+text)
	}
	assertAbsent(t, filepath.Join(ws, ".gitconfig"))
	text = call["exec"](map[string]any{"command": "echo y > .bashrc"})
	assert.NotContains(t, text, "exit code 0", text)
	assert.Equal(t, "x\n", readFile(t, filepath.Join(ws, ".bashrc")))
	text = call["write"](map[string]any{"file_path": filepath.Join(ws, ".zshrc"), "content": "x\n"})
	assert.Contains(t, text, sandbox.DenialMarker(ww), text)
	assertAbsent(t, filepath.Join(ws, ".zshrc"))
}

// TestHostRunBeneathAMissingParent (issue 34, the attack review's input): in
// a home workspace without .config/ (whose git and fish read
// .config/git/config and .config/fish/config.fish), a command can make
// neither .config/git nor .config/fish by any route (mkdir -p, a prepared
// tree renamed or linked into place): the missing .config is reserved while
// it runs, and writing beneath it gives the marker; nothing of it is on disk
// afterwards. The write tool refuses both too.
func TestHostRunBeneathAMissingParent(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	call, ws := hostRunServerAt(t, nil, true)
	require.NoError(t, os.Remove(filepath.Join(ws, ".config")))
	cfg := filepath.Join(ws, ".config")
	for _, name := range []string{"git/config", "fish/config.fish"} {
		text := call["exec"](map[string]any{"command": "mkdir -p " + quote(filepath.Dir(filepath.Join(cfg, name))) + " && echo pager=x > " + quote(filepath.Join(cfg, name))})
		assert.NotContains(t, text, "exit code 0", text)
		assert.Contains(t, text, sandbox.DenialMarker(ww), text)
		assertAbsent(t, cfg)
		text = call["write"](map[string]any{"file_path": filepath.Join(cfg, name), "content": "x\n"})
		assert.Contains(t, text, sandbox.DenialMarker(ww), text)
		assertAbsent(t, cfg)
	}
	for _, cmd := range []string{
		"mkdir -p p/git && echo x > p/git/config && mv p .config",
		"mkdir -p q/git && echo x > q/git/config && ln -s q .config",
		"mkdir -p r/git && echo x > r/git/config && mv -T r .config",
	} {
		text := call["exec"](map[string]any{"command": cmd})
		assert.NotContains(t, text, "exit code 0", cmd+": "+text)
		assertAbsent(t, cfg)
	}
	// The prepared trees are the command's own, where it made them.
	assert.Equal(t, "x\n", readFile(t, filepath.Join(ws, "p/git/config")))
	assert.Equal(t, "x\n", readFile(t, filepath.Join(ws, "r/git/config")))

	// A file named .config is in the way: removing it to make the
	// directory is refused, and it stays as it was.
	require.NoError(t, os.WriteFile(cfg, []byte("mine\n"), 0o644))
	text := call["exec"](map[string]any{"command": "rm -f .config; mkdir -p .config/git && echo x > .config/git/config"})
	assert.NotContains(t, text, "exit code 0", text)
	assert.Equal(t, "mine\n", readFile(t, cfg))
	// A dangling .config link refuses no command.
	require.NoError(t, os.Remove(cfg))
	require.NoError(t, os.Symlink("nowhere", cfg))
	text = call["exec"](map[string]any{"command": "echo ok > ok.txt"})
	assert.Contains(t, text, "exit code 0", text)
	assert.Equal(t, "ok\n", readFile(t, filepath.Join(ws, "ok.txt")))
}

// TestHostRunInAHomeOrConfigHomeBeneathTheWorkspace (issue 34, the attack
// review's input): a home that lies beneath the workspace root ($HOME at
// ws/home/u) and a $XDG_CONFIG_HOME inside it (ws/cfg) are read by the
// host's shells and git as a root's top is: a command can create neither
// home/u/.bashrc, home/u/.config/git/config nor cfg/git/config (missing
// parents included), and cannot change an existing cfg/fish/config.fish;
// the write tool refuses the same; nothing is on disk afterwards.
func TestHostRunInAHomeOrConfigHomeBeneathTheWorkspace(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, base, "ws/home/u/", "ws/cfg/fish/config.fish: old\n", "temp/")
	ws := filepath.Join(base, "ws")
	t.Setenv("HOME", filepath.Join(ws, "home/u"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(ws, "cfg"))
	run := serveAt(t, ws, filepath.Join(base, "temp"))
	for _, rel := range []string{"home/u/.bashrc", "home/u/.config/git/config", "cfg/git/config", "home/u/.mcp.json"} {
		p := filepath.Join(ws, rel)
		text := run("exec", map[string]any{"command": "mkdir -p " + quote(filepath.Dir(p)) + "; echo x > " + quote(p)})
		assert.NotContains(t, text, "exit code 0", rel+": "+text)
		assertAbsent(t, p)
		text = run("write", map[string]any{"file_path": p, "content": "x\n"})
		assert.Contains(t, text, sandbox.DenialMarker(ww), rel+": "+text)
		assertAbsent(t, p)
	}
	assertAbsent(t, filepath.Join(ws, "home/u/.config"))
	assertAbsent(t, filepath.Join(ws, "cfg/git"))
	fish := filepath.Join(ws, "cfg/fish/config.fish")
	text := run("exec", map[string]any{"command": "echo x > " + quote(fish)})
	assert.NotContains(t, text, "exit code 0", text)
	assert.Equal(t, "old\n", readFile(t, fish))
	text = run("write", map[string]any{"file_path": fish, "content": "x\n"})
	assert.Contains(t, text, sandbox.DenialMarker(ww), text)
	assert.Equal(t, "old\n", readFile(t, fish))
	// The rest of the home and of the configuration home stays writable.
	text = run("exec", map[string]any{"command": "echo ok > home/u/notes.txt && mkdir -p cfg/nvim && echo ok > cfg/nvim/init.lua"})
	assert.Contains(t, text, "exit code 0", text)
	assert.Equal(t, "ok\n", readFile(t, filepath.Join(ws, "cfg/nvim/init.lua")))
}

// TestLinkedHostRunFilesProtected (issue 34, the attack review's input): in a
// home workspace, a host-run file that is a symlink into the tree (a dotfiles layout:
// .bashrc linked to dotfiles/bashrc, .config/git to dots/git) keeps what it
// links to read-only: neither a command nor the write tool changes it
// through the link or at its own path, and the bytes stay; the rest of the
// dotfiles tree stays writable.
func TestLinkedHostRunFilesProtected(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	call, ws := hostRunServerAt(t, nil, true)
	fixture.Build(t, ws, "dotfiles/bashrc: mine\n", "dots/git/config: [core]\n", "dotfiles/notes: n\n")
	require.NoError(t, os.Symlink("dotfiles/bashrc", filepath.Join(ws, ".bashrc")))
	require.NoError(t, os.Symlink("../dots/git", filepath.Join(ws, ".config/git")))
	for _, c := range []struct{ path, target, want string }{
		{".bashrc", "dotfiles/bashrc", "mine\n"},
		{".config/git/config", "dots/git/config", "[core]\n"},
	} {
		text := call["exec"](map[string]any{"command": "echo 'touch /tmp/PWNED' >> " + c.path})
		assert.NotContains(t, text, "exit code 0", c.path+": "+text)
		text = call["exec"](map[string]any{"command": "echo 'touch /tmp/PWNED' >> " + c.target})
		assert.NotContains(t, text, "exit code 0", c.target+": "+text)
		assert.Equal(t, c.want, readFile(t, filepath.Join(ws, c.target)))
		for _, p := range []string{c.path, c.target} {
			text = call["write"](map[string]any{"file_path": filepath.Join(ws, p), "content": "touch /tmp/PWNED\n"})
			assert.Contains(t, text, sandbox.DenialMarker(ww), p+": "+text)
			assert.Equal(t, c.want, readFile(t, filepath.Join(ws, c.target)))
		}
	}
	text := call["exec"](map[string]any{"command": "echo more >> dotfiles/notes && echo new > dots/other"})
	assert.Contains(t, text, "exit code 0", text)
	assert.Equal(t, "n\nmore\n", readFile(t, filepath.Join(ws, "dotfiles/notes")))

	// A link inside a protected directory (.vscode/tasks.json linked to
	// dotfiles/tasks.json): what it links to is protected too.
	fixture.Build(t, ws, "dotfiles/tasks.json: {}\n", ".vscode/")
	require.NoError(t, os.Symlink("../dotfiles/tasks.json", filepath.Join(ws, ".vscode/tasks.json")))
	text = call["exec"](map[string]any{"command": "echo '{\"tasks\":[]}' > dotfiles/tasks.json"})
	assert.NotContains(t, text, "exit code 0", text)
	for _, p := range []string{".vscode/tasks.json", "dotfiles/tasks.json"} {
		text = call["write"](map[string]any{"file_path": filepath.Join(ws, p), "content": "{\"tasks\":[]}\n"})
		assert.Contains(t, text, sandbox.DenialMarker(ww), p+": "+text)
	}
	assert.Equal(t, "{}\n", readFile(t, filepath.Join(ws, "dotfiles/tasks.json")))

	// The link itself replaced by a command (removed, a file or a
	// directory of its own put in its place; the review, for .bashrc and
	// for a whole ~/.config linked into dotfiles): when the command ends
	// its entry is moved aside and the link made again, and the command's
	// answer says so.
	require.NoError(t, os.Remove(filepath.Join(ws, ".config/git")))
	require.NoError(t, os.Remove(filepath.Join(ws, ".config")))
	require.NoError(t, os.Symlink("dots", filepath.Join(ws, ".config")))
	for _, c := range []struct{ link, target, cmd string }{
		{".bashrc", "dotfiles/bashrc", "rm .bashrc && echo 'touch /tmp/PWNED' > .bashrc"},
		{".config", "dots", "rm .config && mkdir -p .config/git && printf '[core]\\n\\tpager = touch /tmp/PWNED\\n' > .config/git/config"},
	} {
		text := call["exec"](map[string]any{"command": c.cmd})
		assert.Contains(t, text, strconv.Quote(filepath.Join(ws, c.link))+": a protected link's place", c.link+": "+text)
		assert.Contains(t, text, "in place of a protected link", text)
		assert.NotContains(t, text, "left git state", text)
		got, err := os.Readlink(filepath.Join(ws, c.link))
		require.NoError(t, err, "%s is a link again: %s", c.link, text)
		assert.Equal(t, c.target, got)
		aside, err := filepath.Glob(filepath.Join(ws, c.link+".harness-replaced-*"))
		require.NoError(t, err)
		assert.Len(t, aside, 1, "the command's entry, moved aside")
	}
	assert.Equal(t, "mine\n", readFile(t, filepath.Join(ws, "dotfiles/bashrc")))
	assert.Equal(t, "[core]\n", readFile(t, filepath.Join(ws, "dots/git/config")))

	// A link made again as it was (a dotfiles manager's ln -sfn) is the
	// link: nothing moved aside, nothing reported.
	text = call["exec"](map[string]any{"command": "ln -sfn dotfiles/bashrc .bashrc"})
	assert.Contains(t, text, "exit code 0", text)
	assert.NotContains(t, text, "a protected link's place", text)
	aside, err := filepath.Glob(filepath.Join(ws, ".bashrc.harness-replaced-*"))
	require.NoError(t, err)
	assert.Len(t, aside, 1, "only the earlier command's entry")
}

// TestWorkspaceIsAConfigHome (issue 34, the attack review's input): a
// workspace that is `~/.config` itself (a dotfiles repository; no
// $XDG_CONFIG_HOME), where the any-depth `.config/git` pattern does not
// reach: neither family makes git/config nor fish/config.fish there, and
// nothing is on disk afterwards, while nvim/ stays writable. A workspace
// that is $XDG_CONFIG_HOME/git itself is git's configuration whole: no
// command starts there and the write tool refuses its config.
func TestWorkspaceIsAConfigHome(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, base, "h/.config/", "x/git/", "temp/")
	serve := func(ws string) func(string, map[string]any) string {
		return serveAt(t, ws, filepath.Join(base, "temp"))
	}

	t.Setenv("HOME", filepath.Join(base, "h"))
	t.Setenv("XDG_CONFIG_HOME", "")
	ws := filepath.Join(base, "h/.config")
	run := serve(ws)
	for _, rel := range []string{"git/config", "fish/config.fish"} {
		p := filepath.Join(ws, rel)
		text := run("exec", map[string]any{"command": "mkdir -p " + quote(filepath.Dir(p)) + "; echo x > " + quote(p)})
		assert.NotContains(t, text, "exit code 0", rel+": "+text)
		assertAbsent(t, filepath.Dir(p))
		text = run("write", map[string]any{"file_path": p, "content": "x\n"})
		assert.Contains(t, text, sandbox.DenialMarker(ww), rel+": "+text)
		assertAbsent(t, filepath.Dir(p))
	}
	text := run("exec", map[string]any{"command": "mkdir -p nvim && echo ok > nvim/init.lua"})
	assert.Contains(t, text, "exit code 0", text)
	assert.Equal(t, "ok\n", readFile(t, filepath.Join(ws, "nvim/init.lua")))

	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "x"))
	ws = filepath.Join(base, "x/git")
	run = serve(ws)
	text = run("exec", map[string]any{"command": "echo x > config"})
	assert.NotContains(t, text, "exit code 0", text)
	assertAbsent(t, filepath.Join(ws, "config"))
	text = run("write", map[string]any{"file_path": filepath.Join(ws, "config"), "content": "x\n"})
	assert.Contains(t, text, sandbox.DenialMarker(ww), text)
	assertAbsent(t, filepath.Join(ws, "config"))
}

// TestUnprotectOne (issue 23): --unprotect .vscode lets both families write
// .vscode, and no other host-run file.
func TestUnprotectOne(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	call, ws := hostRunServer(t, []string{".vscode"})
	text := call["write"](map[string]any{"file_path": filepath.Join(ws, ".vscode/tasks.json"), "content": "x\n"})
	assert.Equal(t, "x\n", readFile(t, filepath.Join(ws, ".vscode/tasks.json")), text)
	text = call["exec"](map[string]any{"command": "echo y > " + quote(filepath.Join(ws, ".vscode/launch.json"))})
	assert.Equal(t, "y\n", readFile(t, filepath.Join(ws, ".vscode/launch.json")), text)
	text = call["exec"](map[string]any{"command": "mkdir " + quote(filepath.Join(ws, ".idea"))})
	assert.NotContains(t, text, "exit code 0")
	assertAbsent(t, filepath.Join(ws, ".idea"))
	text = call["write"](map[string]any{"file_path": filepath.Join(ws, ".mcp.json"), "content": "{}"})
	assert.Contains(t, text, sandbox.DenialMarker(ww), text)
	assertAbsent(t, filepath.Join(ws, ".mcp.json"))
}

// assertAbsent checks nothing is at p.
func assertAbsent(t *testing.T, p string) {
	t.Helper()
	_, err := os.Lstat(p)
	assert.True(t, os.IsNotExist(err), "%s exists on disk", p)
}

// TestRootNotMadeAGitDirectory (issue 23, the attack review's input): an
// agent breaks the workspace's .git (garbage in .git/HEAD, writable under
// --vcs commit) and lays out HEAD, objects/, refs/ and a config whose
// core.fsmonitor runs a command at the workspace's top, so that git on the
// host falls back to the root as a bare repository and runs it. The
// top-level HEAD is refused to both families, so the host's `git status`
// runs nothing.
func TestRootNotMadeAGitDirectory(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	gitBin, err := osexec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	call, ws := hostRunServer(t, nil)
	host := func(args ...string) {
		cmd := osexec.Command(gitBin, args...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		_, _ = cmd.CombinedOutput()
	}
	host("init", "-q")
	pwned := filepath.Join(t.TempDir(), "PWNED")
	config := "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = \"touch " + pwned + "; false\"\n"

	// The file tools alone.
	for _, w := range []struct{ path, content string }{
		{".git/HEAD", "garbage"}, {"objects/keep", "x"}, {"refs/heads/keep", "x"}, {"config", config},
	} {
		call["write"](map[string]any{"file_path": filepath.Join(ws, w.path), "content": w.content})
	}
	text := call["write"](map[string]any{"file_path": filepath.Join(ws, "HEAD"), "content": "ref: refs/heads/master\n"})
	assert.Contains(t, text, sandbox.DenialMarker(ww), text)
	assertAbsent(t, filepath.Join(ws, "HEAD"))
	host("status")
	assertAbsent(t, pwned)

	// One command.
	text = call["exec"](map[string]any{"command": "printf 'ref: refs/heads/master\\n' > HEAD"})
	assert.NotContains(t, text, "exit code 0", text)
	assertAbsent(t, filepath.Join(ws, "HEAD"))
	host("status")
	assertAbsent(t, pwned)
}

// TestUsersEmptyHostRunFilesKept (issue 23, the attack review's input): a
// user's own empty .vscode of mode 0555 and empty .envrc of mode 0444, the
// modes of the runner's placeholders, are still there after a command.
func TestUsersEmptyHostRunFilesKept(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	call, ws := hostRunServer(t, nil)
	require.NoError(t, os.Mkdir(filepath.Join(ws, ".vscode"), 0o555))
	require.NoError(t, os.Chmod(filepath.Join(ws, ".vscode"), 0o555))
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".envrc"), nil, 0o444))
	require.NoError(t, os.Chmod(filepath.Join(ws, ".envrc"), 0o444))
	text := call["exec"](map[string]any{"command": "true"})
	assert.Contains(t, text, "exit code 0", text)
	st, err := os.Lstat(filepath.Join(ws, ".vscode"))
	require.NoError(t, err, "the user's .vscode was removed")
	assert.Equal(t, os.ModeDir|0o555, st.Mode())
	st, err = os.Lstat(filepath.Join(ws, ".envrc"))
	require.NoError(t, err, "the user's .envrc was removed")
	assert.Equal(t, os.FileMode(0o444), st.Mode())
}

// TestGitRunStateFileTools (issue 35): under --vcs commit the file tools
// neither create, write, edit nor move into place the git state that makes
// the user's git run a program (a rebase todo with an exec line, a merge
// strategy, a cherry-pick's options), and the disk keeps what was there; a
// command that leaves such state gets the sandbox's marker naming it, and
// the file on disk runs nothing.
func TestGitRunStateFileTools(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	gitBin, err := osexec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	call, ws := hostRunServer(t, nil)
	host := func(args ...string) {
		cmd := osexec.Command(gitBin, append([]string{"-c", "safe.directory=*"}, args...)...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	host("init", "-q", "-b", "main")
	fixture.Build(t, ws, "a.txt: a\n", "prep/git-rebase-todo: exec touch /tmp/x\n", "todo: exec touch /tmp/x\n")
	host("add", "a.txt")
	host("commit", "-qm", "a")
	for _, rel := range []string{".git/rebase-merge/git-rebase-todo", ".git/rebase-merge/strategy", ".git/sequencer/opts", ".git/sequencer/todo", ".git/rebase-merge"} {
		text := call["write"](map[string]any{"file_path": filepath.Join(ws, rel), "content": "exec touch /tmp/x\n"})
		assert.Contains(t, text, sandbox.DenialMarker(ww), text)
		assertAbsent(t, filepath.Join(ws, rel))
	}
	text := call["move"](map[string]any{"source": filepath.Join(ws, "prep"), "destination": filepath.Join(ws, ".git/rebase-merge")})
	assert.Contains(t, text, sandbox.DenialMarker(ww), text)
	assertAbsent(t, filepath.Join(ws, ".git/rebase-merge"))
	call["mkdir"](map[string]any{"path": filepath.Join(ws, ".git/worktrees")})
	text = call["move"](map[string]any{"source": filepath.Join(ws, "prep"), "destination": filepath.Join(ws, ".git/worktrees/w")})
	assert.Contains(t, text, sandbox.DenialMarker(ww), text)
	assertAbsent(t, filepath.Join(ws, ".git/worktrees/w"))

	// A rebase stopped by git itself (a break, another to come), then an
	// exec line added with edit or moved over it: refused, the todo
	// unchanged.
	text = call["exec"](map[string]any{"command": "export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t; " +
		"GIT_SEQUENCE_EDITOR=\"printf 'break\\nbreak\\n' >\" git rebase -i HEAD"})
	assert.Contains(t, text, "exit code 0", text)
	assert.NotContains(t, text, sandbox.DenialMarker(ww), "git's own state is nothing to disarm: "+text)
	todo := filepath.Join(ws, ".git/rebase-merge/git-rebase-todo")
	before := readFile(t, todo)
	call["read"](map[string]any{"file_path": todo})
	text = call["edit"](map[string]any{"file_path": todo, "old_string": before, "new_string": "exec touch /tmp/x\n" + before})
	assert.Contains(t, text, sandbox.DenialMarker(ww), text)
	assert.Equal(t, before, readFile(t, todo))
	text = call["move"](map[string]any{"source": filepath.Join(ws, "todo"), "destination": todo, "overwrite": true})
	assert.Contains(t, text, sandbox.DenialMarker(ww), text)
	assert.Equal(t, before, readFile(t, todo))

	// The same by a command: the marker, the line named, nothing to run.
	text = call["exec"](map[string]any{"command": "echo 'exec touch /tmp/x' >> .git/rebase-merge/git-rebase-todo"})
	assert.Contains(t, text, sandbox.DenialMarker(ww), text)
	assert.Contains(t, text, strconv.Quote(todo)+": the rebase todo's exec lines", text)
	assert.Contains(t, readFile(t, todo), "# disarmed by harness: exec touch /tmp/x")
}

// TestLinkedGitMembersProtected (issue 36): a repository whose hooks/ and
// info/attributes are symlinks into the tree (a shared `githooks/`, as
// tools set up) keeps what they link to read-only: neither a command nor
// the write tool makes a hook there (nothing on disk afterwards), and the
// host's `git commit` runs none; the rest of the tree stays writable.
func TestLinkedGitMembersProtected(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	if _, err := osexec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	call, ws := hostRunServer(t, nil)
	git := func(args ...string) {
		t.Helper()
		out, err := osexec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	git("init", "-q")
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "githooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "attrs"), []byte("*.txt text\n"), 0o644))
	require.NoError(t, os.RemoveAll(filepath.Join(ws, ".git", "hooks")))
	require.NoError(t, os.Symlink("../githooks", filepath.Join(ws, ".git", "hooks")))
	require.NoError(t, os.Symlink("../../attrs", filepath.Join(ws, ".git", "info", "attributes")))

	text := call["exec"](map[string]any{"command": `printf '#!/bin/sh\ntouch HOOKED\n' > githooks/pre-commit; chmod +x githooks/pre-commit
printf '#!/bin/sh\ntouch HOOKED\n' > .git/hooks/post-commit
echo '* filter=evil' >> attrs
echo ok > free.txt`})
	assert.Contains(t, text, "githooks/pre-commit: Read-only file system", text)
	assert.NoFileExists(t, filepath.Join(ws, "githooks", "pre-commit"))
	assert.NoFileExists(t, filepath.Join(ws, "githooks", "post-commit"))
	b, err := os.ReadFile(filepath.Join(ws, "attrs"))
	require.NoError(t, err)
	assert.Equal(t, "*.txt text\n", string(b))
	assert.FileExists(t, filepath.Join(ws, "free.txt"), "the rest of the tree is writable")

	text = call["write"](map[string]any{"file_path": "githooks/pre-commit", "content": "#!/bin/sh\ntouch HOOKED\n"})
	assert.Contains(t, text, sandbox.DenialMarker(sandbox.WorkspaceWrite), text)
	assert.NoFileExists(t, filepath.Join(ws, "githooks", "pre-commit"))

	git("-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "host")
	assert.NoFileExists(t, filepath.Join(ws, "HOOKED"))
}

// TestAbsoluteConfigLink (issue 34): a home workspace whose `~/.config` is
// an absolute link, into the home (`ln -s ~/dotfiles/config ~/.config`) or
// out of the roots: every command starts (bubblewrap resolved the link's
// target against its own root, and every command failed), neither family
// makes `.config/git/config` nor `.config/fish` through it, other files
// stay writable, and nothing is made out of the roots.
func TestAbsoluteConfigLink(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, base, "in/dots/cfg/git/", "h/", "out/cfg/git/", "temp/")
	t.Setenv("XDG_CONFIG_HOME", "")
	for _, c := range []struct{ name, home, target string }{
		{"into the home", "in", "in/dots/cfg"},
		{"out of the roots", "h", "out/cfg"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home, target := filepath.Join(base, c.home), filepath.Join(base, c.target)
			require.NoError(t, os.Symlink(target, filepath.Join(home, ".config")))
			t.Setenv("HOME", home)
			run := serveAt(t, home, filepath.Join(base, "temp"))
			text := run("exec", map[string]any{"command": "ls .config/ && echo ok > notes.txt"})
			assert.Contains(t, text, "exit code 0", text)
			assert.Equal(t, "ok\n", readFile(t, filepath.Join(home, "notes.txt")))
			for _, cmd := range []string{
				"printf '[core]\\n\\tpager = touch /tmp/PWNED\\n' > .config/git/config",
				"mkdir -p .config/fish && echo 'touch /tmp/PWNED' > .config/fish/config.fish",
			} {
				text = run("exec", map[string]any{"command": cmd})
				assert.NotContains(t, text, "exit code 0", cmd+": "+text)
			}
			text = run("write", map[string]any{"file_path": filepath.Join(home, ".config/git/config"), "content": "[core]\n"})
			assert.Contains(t, text, sandbox.DenialMarker(ww), text)
			entries, err := os.ReadDir(target)
			require.NoError(t, err)
			require.Len(t, entries, 1, "only git/ in %s", target)
			assert.Equal(t, "git", entries[0].Name())
			assertAbsent(t, filepath.Join(target, "git/config"))
		})
	}
}

// TestMoveBringsNoHostRunFile (issue 34, the attack review's input): in a
// home workspace without `~/.config`, a command prepares `x/git/config`
// (a core.pager); the move tool refuses to move x onto `.config`, with the
// sandbox's marker, and nothing moves; a directory holding nothing
// reserved moves there.
func TestMoveBringsNoHostRunFile(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, base, "h/", "temp/")
	home := filepath.Join(base, "h")
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	run := serveAt(t, home, filepath.Join(base, "temp"))
	text := run("exec", map[string]any{"command": "mkdir -p x/git z && printf '[core]\\n\\tpager = touch /tmp/PWNED\\n' > x/git/config && echo ok > z/notes"})
	require.Contains(t, text, "exit code 0", text)
	text = run("move", map[string]any{"source": filepath.Join(home, "x"), "destination": filepath.Join(home, ".config")})
	assert.Contains(t, text, sandbox.DenialMarker(ww), text)
	assertAbsent(t, filepath.Join(home, ".config"))
	assert.Equal(t, "[core]\n\tpager = touch /tmp/PWNED\n", readFile(t, filepath.Join(home, "x/git/config")))

	// A symlink onto .config leads the host elsewhere (the second review:
	// lk -> cfgdir, or a link through /proc/self/cwd).
	text = run("exec", map[string]any{"command": "mkdir cfgdir && ln -s cfgdir lk"})
	require.Contains(t, text, "exit code 0", text)
	text = run("move", map[string]any{"source": filepath.Join(home, "lk"), "destination": filepath.Join(home, ".config")})
	assert.Contains(t, text, sandbox.DenialMarker(ww), text)
	assertAbsent(t, filepath.Join(home, ".config"))

	text = run("move", map[string]any{"source": filepath.Join(home, "z"), "destination": filepath.Join(home, ".config")})
	assert.Contains(t, text, "Moved directory", text)
	assert.Equal(t, "ok\n", readFile(t, filepath.Join(home, ".config/notes")))
	// Nor is .config moved away, or replaced (the second review: a running
	// command's placeholder replaced, then moved away, then a link put in
	// its place).
	text = run("move", map[string]any{"source": filepath.Join(home, ".config"), "destination": filepath.Join(home, "gone")})
	assert.Contains(t, text, sandbox.DenialMarker(ww), text)
	text = run("move", map[string]any{"source": filepath.Join(home, "cfgdir"), "destination": filepath.Join(home, ".config"), "overwrite": true})
	assert.Contains(t, text, sandbox.DenialMarker(ww), text)
	assert.Equal(t, "ok\n", readFile(t, filepath.Join(home, ".config/notes")))
	assertAbsent(t, filepath.Join(home, "gone"))
}

// TestLinkedConfigWithoutGit (issue 34, the second review's input): a home
// workspace whose `.config` links into a dotfiles tree without `git/` or
// `fish/` (a stow layout): the write tool, by either path, and a command
// make neither there.
func TestLinkedConfigWithoutGit(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, base, "h/dotfiles/config/", "temp/")
	home := filepath.Join(base, "h")
	require.NoError(t, os.Symlink("dotfiles/config", filepath.Join(home, ".config")))
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	run := serveAt(t, home, filepath.Join(base, "temp"))
	for _, p := range []string{".config/git/config", "dotfiles/config/git/config", ".config/fish/config.fish", "dotfiles/config/fish/config.fish"} {
		text := run("write", map[string]any{"file_path": filepath.Join(home, p), "content": "[core]\n\tpager = touch /tmp/PWNED\n"})
		assert.Contains(t, text, sandbox.DenialMarker(ww), p+": "+text)
		text = run("exec", map[string]any{"command": "mkdir -p " + quote(filepath.Dir(p)) + " && echo x > " + quote(p)})
		assert.NotContains(t, text, "exit code 0", p+": "+text)
	}
	entries, err := os.ReadDir(filepath.Join(home, "dotfiles/config"))
	require.NoError(t, err)
	assert.Empty(t, entries)
}

// TestHomeLinksIntoTheWorkspace (issue 34, the attack review's input): the
// workspace is ~/dotfiles and the home, out of it, links into it
// (`~/.config -> dotfiles/config`, `~/.bashrc -> dotfiles/bashrc`,
// `~/.gitconfig -> dotfiles/gitconfig`, the last two missing or not): no
// command nor file tool writes or makes what the home's shell and git read
// there, the bytes stay, and nothing is left; other files stay writable.
func TestHomeLinksIntoTheWorkspace(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, base, "h/", "h/dotfiles/config/", "h/dotfiles/bashrc: mine\n", "temp/")
	home, ws := filepath.Join(base, "h"), filepath.Join(base, "h/dotfiles")
	for name, target := range map[string]string{".config": "dotfiles/config", ".bashrc": "dotfiles/bashrc", ".gitconfig": "dotfiles/gitconfig"} {
		require.NoError(t, os.Symlink(target, filepath.Join(home, name)))
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	run := serveAt(t, ws, filepath.Join(base, "temp"))
	for _, cmd := range []string{
		"mkdir -p config/git && printf '[core]\\n\\tpager = touch /tmp/PWNED\\n' > config/git/config",
		"echo 'touch /tmp/PWNED' >> bashrc",
		"printf '[core]\\n\\tpager = touch /tmp/PWNED\\n' > gitconfig",
	} {
		text := run("exec", map[string]any{"command": cmd})
		assert.NotContains(t, text, "exit code 0", cmd+": "+text)
	}
	for _, p := range []string{"config/git/config", "bashrc", "gitconfig"} {
		text := run("write", map[string]any{"file_path": filepath.Join(ws, p), "content": "touch /tmp/PWNED\n"})
		assert.Contains(t, text, sandbox.DenialMarker(ww), p+": "+text)
	}
	assert.Equal(t, "mine\n", readFile(t, filepath.Join(ws, "bashrc")))
	assertAbsent(t, filepath.Join(ws, "config/git"))
	assertAbsent(t, filepath.Join(ws, "gitconfig"))
	text := run("exec", map[string]any{"command": "echo ok > notes && mkdir -p config/nvim && echo ok > config/nvim/init.lua"})
	assert.Contains(t, text, "exit code 0", text)
	assert.Equal(t, "ok\n", readFile(t, filepath.Join(ws, "config/nvim/init.lua")))
}
