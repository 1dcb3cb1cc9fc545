//go:build linux

package execsandbox_test

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fixtures "github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/gpgagent"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// gpgHome makes a home of the test's user, outside every writable root,
// with a GnuPG home holding one signing key without a passphrase, and
// points HOME at it (GNUPGHOME unset), for this test and the commands it
// runs. It skips when GnuPG or git is not installed.
func gpgHome(t *testing.T) string {
	t.Helper()
	home := filepath.Join(fixtures.OutsideDir(t), "home")
	require.NoError(t, os.Mkdir(home, 0o700))
	gpgInit(t, home, "")
	return home
}

// gpgInit points HOME at home and GNUPGHOME at gnupghome (unset when ""),
// for this test and the commands it runs, and makes a signing key without
// a passphrase there. It skips when GnuPG or git is not installed.
func gpgInit(t *testing.T, home, gnupghome string) {
	t.Helper()
	for _, tool := range []string{"gpg", "gpgconf", "gpg-agent", "git"} {
		if _, err := osexec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (Debian's gnupg and git packages)", tool)
		}
	}
	t.Setenv("HOME", home)
	t.Setenv("GNUPGHOME", gnupghome)
	if gnupghome == "" {
		require.NoError(t, os.Unsetenv("GNUPGHOME"))
	} else {
		require.NoError(t, os.MkdirAll(gnupghome, 0o700))
	}
	gpg(t, home, "--batch", "--pinentry-mode", "loopback", "--passphrase", "", "--quick-gen-key", "Sandbox Test <sandbox@example.com>", "ed25519", "sign", "never")
	t.Cleanup(func() { _ = osexec.Command("gpgconf", "--kill", "gpg-agent").Run() })
}

func gpg(t *testing.T, home string, args ...string) string {
	t.Helper()
	cmd := osexec.Command("gpg", args...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "gpg %v: %s", args, out)
	return string(out)
}

// privateKeys returns the bytes of every file in the private-keys-v1.d of
// the GnuPG home gnupg, by name.
func privateKeys(t *testing.T, gnupg string) map[string]string {
	t.Helper()
	dir := filepath.Join(gnupg, "private-keys-v1.d")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	require.NotEmpty(t, out, "the key was made")
	return out
}

// TestGPGAgentSigns (issue 36): with --gpg-agent a command's `git commit`
// under commit.gpgsign=true makes a commit the host's git verifies, through
// the agent's restricted socket; the command reads the public keyring but
// not a byte of the private keys, and cannot export a secret key through
// the agent; the GnuPG home is unchanged. Without the flag the same commit
// fails (the control).
func TestGPGAgentSigns(t *testing.T) {
	t.Run("sockets in the GnuPG home", func(t *testing.T) {
		if _, err := os.Stat(runtimeDir()); err == nil {
			t.Skipf("%s exists: GnuPG keeps its sockets there (the next case)", runtimeDir())
		}
		gpgSigns(t)
	})
	// Where systemd logs a user in, /run/user/UID exists and GnuPG keeps
	// its sockets in /run/user/UID/gnupg when only its user may search it:
	// a mask of mode 0555 there sent gpg to the home to start an agent.
	t.Run("sockets in /run/user/UID", func(t *testing.T) {
		needRuntimeDir(t)
		gpgSigns(t)
	})
}

// runtimeDir is /run/user/UID of the test's user.
func runtimeDir() string { return filepath.Join("/run/user", strconv.Itoa(os.Geteuid())) }

// needRuntimeDir makes runtimeDir (0700, the test's user's) for the test
// when it is missing and the test runs as root, else skips.
func needRuntimeDir(t *testing.T) {
	t.Helper()
	dir := runtimeDir()
	if _, err := os.Stat(dir); err == nil {
		return
	}
	if os.Geteuid() != 0 {
		t.Skipf("%s does not exist and only root may make it", dir)
	}
	require.NoError(t, os.MkdirAll(dir, 0o700))
	t.Cleanup(func() {
		_ = osexec.Command("gpgconf", "--kill", "gpg-agent").Run()
		_ = os.RemoveAll(dir)
	})
}

// gpgSigns is TestGPGAgentSigns in the machine's socket layout.
func gpgSigns(t *testing.T) {
	home := gpgHome(t)
	keys := privateKeys(t, filepath.Join(home, ".gnupg"))
	agent, err := gpgagent.Find(t.Context())
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, ".gnupg"), agent.Home)
	if _, err := os.Stat(runtimeDir()); err == nil {
		assert.Equal(t, filepath.Join(runtimeDir(), "gnupg"), filepath.Dir(agent.Socket))
	}
	// The server's own user: an agent serves its own user only.
	o := owner{"the server's user", os.Geteuid()}
	w := newWorldWith(t, o, exec.Config{}, func(c *sandboxpolicy.Config) { c.Homes = []string{home} }, nil)
	git := func(args ...string) string {
		t.Helper()
		cmd := osexec.Command("git", append([]string{"-C", w.ws}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return string(out)
	}
	git("init", "-q")
	git("config", "user.name", "Sandbox Test")
	git("config", "user.email", "sandbox@example.com")
	git("config", "user.signingkey", "sandbox@example.com")
	git("config", "commit.gpgsign", "true")
	before := dirState(t, filepath.Join(home, ".gnupg"))

	const command = `echo one > a && git add a && git commit -q -m signed && echo committed
gpg --export-secret-keys --armor 2>&1
cat ~/.gnupg/private-keys-v1.d/* 2>&1
ls -A ~/.gnupg/private-keys-v1.d 2>/dev/null | wc -l
wc -c < ~/.gnupg/pubring.kbx`

	t.Run("without the flag the commit is not signed", func(t *testing.T) {
		res := w.run(t, sandbox.WorkspaceWrite, command)
		assert.NotContains(t, res.Stdout.Text, "committed", res.Stderr.Text)
	})

	w = withRunner(t, w, execsandbox.Config{GPGAgent: &agent})
	res := w.run(t, sandbox.WorkspaceWrite, command)
	t.Logf("stdout %q stderr %q", res.Stdout.Text, res.Stderr.Text)
	lines := strings.Split(strings.TrimSpace(res.Stdout.Text), "\n")
	require.GreaterOrEqual(t, len(lines), 3, res.Stdout.Text)
	assert.Equal(t, "committed", lines[0], res.Stderr.Text)
	pubring, err := os.Stat(filepath.Join(home, ".gnupg", "pubring.kbx"))
	require.NoError(t, err)
	assert.Equal(t, strconv.FormatInt(pubring.Size(), 10), lines[len(lines)-1], "the public keyring is readable")
	assert.Equal(t, "0", lines[len(lines)-2], "private-keys-v1.d lists no entry")
	assert.NotContains(t, res.Stdout.Text, "PRIVATE KEY BLOCK")
	for name, key := range keys {
		assert.NotContains(t, res.Stdout.Text+res.Stderr.Text, strings.TrimSpace(key), "the private key %s was read", name)
	}
	assert.Equal(t, keys, privateKeys(t, filepath.Join(home, ".gnupg")))
	assert.Equal(t, before, dirState(t, filepath.Join(home, ".gnupg")), "the GnuPG home changed")
	verify := osexec.Command("git", "-C", w.ws, "verify-commit", "HEAD")
	verify.Env = append(os.Environ(), "HOME="+home)
	out, err := verify.CombinedOutput()
	assert.NoError(t, err, "the host's git does not verify the command's commit: %s", out)
	assert.Contains(t, string(out), "Good signature")
}

// dirState is the lstat of each entry of dir (not recursive), by name, with
// the bytes of its regular files.
func dirState(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var paths []string
	for _, e := range entries {
		paths = append(paths, filepath.Join(dir, e.Name()))
	}
	return protectedStates(t, paths)
}

// TestNamedSocketBeneathADenyReadDirectory (issue 36): a socket named with
// --unix-socket inside a deny-read directory (the agent socket in
// ~/.gnupg) is reachable, and the commands start: the directory stays
// masked but for it, and the other sockets there stay out of reach.
func TestNamedSocketBeneathADenyReadDirectory(t *testing.T) {
	perl := fixtures.Perl(t)
	home := filepath.Join(fixtures.OutsideDir(t), "home")
	gnupg := filepath.Join(home, ".gnupg")
	require.NoError(t, os.MkdirAll(gnupg, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(gnupg, "secret"), []byte("the private key"), 0o600))
	named := fixtures.ListenUnix(t, filepath.Join(gnupg, "S.gpg-agent"))
	other := fixtures.ListenUnix(t, filepath.Join(gnupg, "S.gpg-agent.extra"))
	o := owner{"the server's user", os.Geteuid()}
	w := newWorldWith(t, o, exec.Config{}, func(c *sandboxpolicy.Config) { c.Homes = []string{home} }, nil)
	w = withRunner(t, w, execsandbox.Config{UnixSocketPaths: []string{named.Path}})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := w.try(ctx, sandbox.WorkspaceWrite, fixtures.ConnectUnix(perl, "hi", named.Path, other.Path)+"; ls -A "+gnupg+"; cat "+gnupg+"/secret", time.Minute)
	require.NoError(t, err)
	got := connected(res.Stdout.Text)
	assert.Equal(t, "OK pong hi", got[named.Path], res.Stdout.Text+res.Stderr.Text)
	assert.True(t, strings.HasPrefix(got[other.Path], "FAIL"), got[other.Path])
	assert.Zero(t, accepted(other))
	assert.Contains(t, res.Stdout.Text, "\nS.gpg-agent\n", "the directory lists the named socket only")
	assert.NotContains(t, res.Stdout.Text, "secret")
	assert.NotContains(t, res.Stdout.Text, "the private key")
}

// TestNewRefusesAnUnusableGPGAgent: --gpg-agent under the Landlock isolation,
// or an agent whose sockets are not sockets, is refused when the runner is
// made.
func TestNewRefusesAnUnusableGPGAgent(t *testing.T) {
	dir := fixtures.OutsideDir(t)
	sock := fixtures.ListenUnix(t, filepath.Join(dir, "S.gpg-agent.extra"))
	plain := filepath.Join(dir, "S.gpg-agent")
	require.NoError(t, os.WriteFile(plain, nil, 0o600))
	_, pol := newFixture(t)
	for _, tc := range []struct {
		name  string
		cfg   execsandbox.Config
		wants string
	}{
		{"landlock", execsandbox.Config{Isolation: execsandbox.IsolationLandlock, GPGAgent: &gpgagent.Agent{Home: dir, Socket: sock.Path, ExtraSocket: sock.Path}}, "needs the bubblewrap isolation"},
		{"not a socket", execsandbox.Config{GPGAgent: &gpgagent.Agent{Home: dir, Socket: plain, ExtraSocket: sock.Path}}, "is not a Unix socket now"},
		{"missing", execsandbox.Config{GPGAgent: &gpgagent.Agent{Home: dir, Socket: sock.Path, ExtraSocket: filepath.Join(dir, "gone")}}, "is gpg-agent running?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := execsandbox.New(tc.cfg, exec.Config{}, pol)
			var ee *exec.Error
			require.ErrorAs(t, err, &ee)
			assert.EqualValues(t, exec.CodeInvalidRequest, ee.Code)
			assert.Contains(t, ee.Message, tc.wants)
		})
	}
}

// TestSSHAgentSigns (issue 36): with the ssh agent's socket named
// (--unix-socket "$SSH_AUTH_SOCK", which passes SSH_AUTH_SOCK to
// commands) a command's `git commit` under gpg.format=ssh makes a commit
// the host's git verifies; the private key file in ~/.ssh stays out of its
// reach.
func TestSSHAgentSigns(t *testing.T) {
	for _, tool := range []string{"ssh-agent", "ssh-add", "ssh-keygen", "git"} {
		if _, err := osexec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (Debian's openssh-client and git packages)", tool)
		}
	}
	dir := fixtures.OutsideDir(t)
	home := filepath.Join(dir, "home")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	key := filepath.Join(home, ".ssh", "id_ed25519")
	out, err := osexec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "sandbox", "-f", key).CombinedOutput()
	require.NoError(t, err, "%s", out)
	sock := filepath.Join(dir, "agent.sock")
	agent := osexec.Command("ssh-agent", "-D", "-a", sock)
	require.NoError(t, agent.Start())
	t.Cleanup(func() { _ = agent.Process.Kill(); _ = agent.Wait() })
	require.Eventually(t, func() bool { _, err := os.Stat(sock); return err == nil }, 10*time.Second, 10*time.Millisecond)
	t.Setenv("SSH_AUTH_SOCK", sock)
	out, err = osexec.Command("ssh-add", "-q", key).CombinedOutput()
	require.NoError(t, err, "%s", out)
	pub, err := os.ReadFile(key + ".pub")
	require.NoError(t, err)
	secret, err := os.ReadFile(key)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(key, 0o600))

	o := owner{"the server's user", os.Geteuid()}
	w := newWorldWith(t, o, exec.Config{Env: []string{"SSH_AUTH_SOCK"}}, func(c *sandboxpolicy.Config) {
		c.Homes = []string{home} // ~/.ssh is denied
		// git writes the key it signs with to a temporary file.
		c.TempRoots = c.WritableRoots
		t.Setenv("TMPDIR", c.WritableRoots[0])
	}, nil)
	git := func(args ...string) string {
		t.Helper()
		out, err := osexec.Command("git", append([]string{"-C", w.ws}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return string(out)
	}
	git("init", "-q")
	git("config", "user.name", "Sandbox Test")
	git("config", "user.email", "sandbox@example.com")
	git("config", "gpg.format", "ssh")
	git("config", "user.signingkey", "key::"+strings.TrimSpace(string(pub)))
	git("config", "commit.gpgsign", "true")
	allowed := filepath.Join(dir, "allowed_signers")
	require.NoError(t, os.WriteFile(allowed, []byte("sandbox@example.com "+string(pub)), 0o644))

	r, err := execsandbox.New(execsandbox.Config{UnixSocketPaths: []string{sock}}, exec.Config{Env: []string{"SSH_AUTH_SOCK"}}, w.pol)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	w.r = r
	res := w.run(t, sandbox.WorkspaceWrite, "echo one > a && git add a && git commit -q -m signed && echo committed; cat "+key)
	assert.Equal(t, "committed\n", res.Stdout.Text, res.Stderr.Text)
	assert.NotContains(t, res.Stdout.Text+res.Stderr.Text, strings.TrimSpace(string(secret)))
	git("config", "gpg.ssh.allowedSignersFile", allowed)
	out, err = osexec.Command("git", "-C", w.ws, "verify-commit", "HEAD").CombinedOutput()
	assert.NoError(t, err, "the host's git does not verify the command's commit: %s", out)
	assert.Contains(t, string(out), `Good "git" signature for sandbox@example.com`)
}

// agentCommand signs a commit and tries the keys every way a command may:
// the private keys' files, the agent's export, the GnuPG home's listing
// and its files (written to, too). It waits for the file "go" in the
// workspace after writing "started", so the host may act in between.
const agentCommand = `touch started; while [ ! -e go ]; do sleep 0.05; done
echo one >> a && git add a && git commit -q -m signed && echo committed
gpg --pinentry-mode loopback --passphrase '' --export-secret-keys --armor 2>&1
cat "$GNUPGDIR"/private-keys-v1.d/* 2>&1
ls -A "$GNUPGDIR"
echo "agent-program /bin/false" >> "$GNUPGDIR"/gpg.conf || echo refused
gpg-connect-agent 'GETINFO restricted' /bye`

// TestGPGAgentHolds (issue 36, the attack review of --gpg-agent): the
// agent's home stays masked whole, but for its public files and the
// restricted socket, when the host restarts the agent while a command runs
// (its sockets made again), when the home is inside the workspace (never
// writable), and when GNUPGHOME is not ~/.gnupg (masked all the same).
func TestGPGAgentHolds(t *testing.T) {
	for _, tc := range []struct {
		name string
		// gnupg is the GnuPG home, relative to the home; the
		// workspace is the home itself when inHome.
		gnupg   string
		inHome  bool
		restart bool
	}{
		{name: "the host restarts the agent meanwhile", gnupg: ".gnupg", restart: true},
		{name: "the home inside the workspace", gnupg: ".gnupg", inHome: true},
		{name: "GNUPGHOME elsewhere", gnupg: "keys/gnupg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := fixtures.OutsideDir(t)
			home := filepath.Join(base, "home")
			require.NoError(t, os.Mkdir(home, 0o755))
			gnupg := filepath.Join(home, tc.gnupg)
			env := ""
			if tc.gnupg != ".gnupg" {
				env = gnupg
			}
			gpgInit(t, home, env)
			keys := privateKeys(t, gnupg)
			agent, err := gpgagent.Find(t.Context())
			require.NoError(t, err)
			o := owner{"the server's user", os.Geteuid()}
			w := newWorldWith(t, o, exec.Config{Env: []string{"GNUPGHOME"}}, func(c *sandboxpolicy.Config) {
				c.Homes = []string{home}
				if tc.inHome {
					c.WorkspaceRoot = home
				}
			}, nil)
			ws := w.ws
			if tc.inHome {
				ws = home
			}
			for _, args := range [][]string{
				{"init", "-q"},
				{"config", "user.name", "T"},
				{"config", "user.email", "sandbox@example.com"},
				{"config", "user.signingkey", "sandbox@example.com"},
				{"config", "commit.gpgsign", "true"},
			} {
				cmd := osexec.Command("git", append([]string{"-C", ws}, args...)...)
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "%s", out)
			}
			conf := filepath.Join(gnupg, "gpg.conf")
			require.NoError(t, os.WriteFile(conf, []byte("# the user's\n"), 0o600))
			before := dirState(t, gnupg)
			r, err := execsandbox.New(execsandbox.Config{GPGAgent: &agent}, exec.Config{Env: []string{"GNUPGHOME"}}, w.pol)
			require.NoError(t, err)
			t.Cleanup(func() { _ = r.Close() })
			w.r = r
			done := make(chan exec.Result, 1)
			go func() {
				res, err := w.r.Run(t.Context(), exec.Request{
					Command: "GNUPGDIR=" + gnupg + "\n" + agentCommand, Workdir: ws, Timeout: 2 * time.Minute,
					Policy: carried(w.pol, sandbox.WorkspaceWrite, ws),
				})
				assert.NoError(t, err)
				done <- res
			}()
			require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(ws, "started")); return err == nil }, time.Minute, 10*time.Millisecond)
			if tc.restart {
				for _, args := range [][]string{{"--kill", "gpg-agent"}, {"--launch", "gpg-agent"}} {
					out, err := osexec.Command("gpgconf", args...).CombinedOutput()
					require.NoError(t, err, "%s", out)
				}
				before = dirState(t, gnupg) // the sockets are new
			}
			require.NoError(t, os.WriteFile(filepath.Join(ws, "go"), nil, 0o644))
			res := <-done
			t.Logf("stdout %s\nstderr %s", res.Stdout.Text, res.Stderr.Text)
			out := res.Stdout.Text + res.Stderr.Text
			assert.NotContains(t, out, "PRIVATE KEY BLOCK")
			for name, key := range keys {
				assert.NotContains(t, out, strings.TrimSpace(key), "the private key %s was read", name)
			}
			assert.Contains(t, res.Stdout.Text, "refused", "gpg.conf was written")
			listing := res.Stdout.Text[strings.Index(res.Stdout.Text, "\n")+1:]
			for _, name := range []string{"private-keys-v1.d", "openpgp-revocs.d", "S.gpg-agent.ssh", "S.gpg-agent.extra", "S.gpg-agent.browser", "pubring.kbx~"} {
				assert.NotContains(t, listing, name+"\n", "the command's listing of the home shows %s", name)
			}
			assert.Equal(t, keys, privateKeys(t, gnupg))
			assert.Equal(t, before, dirState(t, gnupg), "the GnuPG home changed")
			if !tc.restart {
				assert.Contains(t, res.Stdout.Text, "committed\n", "signing through the restricted socket")
			}
			// The unrestricted socket answers "ERR 67109120 False".
			assert.NotContains(t, res.Stdout.Text, "False <GPG Agent>", "an unrestricted agent answered")
			if !tc.restart {
				assert.True(t, strings.HasSuffix(res.Stdout.Text, "\nOK\n"), "the restricted agent answers")
			}
		})
	}
}

// TestHomeWorkspaceReservesFiles (issue 34): with the command's home as
// the workspace, its missing host-run files are reserved as empty
// read-only files, which git and shells read as empty (a directory made
// git fail outright); a command still cannot write them, and nothing is
// left after it.
func TestHomeWorkspaceReservesFiles(t *testing.T) {
	if _, err := osexec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	home := filepath.Join(fixtures.OutsideDir(t), "home")
	require.NoError(t, os.Mkdir(home, 0o755))
	t.Setenv("HOME", home)
	o := owner{"the server's user", os.Geteuid()}
	w := newWorldWith(t, o, exec.Config{}, func(c *sandboxpolicy.Config) { c.Homes, c.WorkspaceRoot = []string{home}, home }, nil)
	res, err := w.r.Run(t.Context(), exec.Request{
		Command: `git init -q repo && git -C repo status --short && echo status-ok
stat -c '%F %a %s' .gitconfig .bashrc .git
git config --global user.name x || echo config-refused
echo x > .bashrc || echo bashrc-refused`,
		Workdir: home, Timeout: time.Minute, Policy: carried(w.pol, sandbox.WorkspaceWrite, home),
	})
	require.NoError(t, err)
	t.Logf("stdout %s\nstderr %s", res.Stdout.Text, res.Stderr.Text)
	assert.Contains(t, res.Stdout.Text, "status-ok\n", res.Stderr.Text)
	// The home is in no repository: its .git is held by a named pipe.
	assert.Contains(t, res.Stdout.Text, "regular empty file 444 0\nregular empty file 444 0\nfifo 400 0\n")
	assert.Contains(t, res.Stdout.Text, "config-refused\n")
	assert.Contains(t, res.Stdout.Text, "bashrc-refused\n")
	assert.NotContains(t, res.Stderr.Text, "Is a directory")
	for _, name := range []string{".gitconfig", ".bashrc", ".git", ".profile"} {
		assert.NoFileExists(t, filepath.Join(home, name))
		assert.NoDirExists(t, filepath.Join(home, name))
	}
}

// TestHomeWorkspaceLoginShellReadsProfile (issue 36): with the command's
// home as the workspace, the reserved, missing .bash_profile and
// .bash_login do not shadow the user's ~/.profile: a login bash (here the
// command's own, which sees the same placeholders as the host's) still
// reads it, and a command still cannot write them.
func TestHomeWorkspaceLoginShellReadsProfile(t *testing.T) {
	if _, err := osexec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	home := filepath.Join(fixtures.OutsideDir(t), "home")
	require.NoError(t, os.Mkdir(home, 0o755))
	profile := "export FROM_PROFILE=yes\n"
	require.NoError(t, os.WriteFile(filepath.Join(home, ".profile"), []byte(profile), 0o644))
	t.Setenv("HOME", home)
	o := owner{"the server's user", os.Geteuid()}
	w := newWorldWith(t, o, exec.Config{}, func(c *sandboxpolicy.Config) { c.Homes, c.WorkspaceRoot = []string{home}, home }, nil)
	res, err := w.r.Run(t.Context(), exec.Request{
		Command: `stat -c '%n %F %a' .bash_profile .bash_login
bash -l -c 'echo "profile=$FROM_PROFILE"'
echo 'echo owned' > .bash_profile || echo profile-refused
echo 'echo owned' > .bash_login || echo login-refused`,
		Workdir: home, Timeout: time.Minute, Policy: carried(w.pol, sandbox.WorkspaceWrite, home),
	})
	require.NoError(t, err)
	t.Logf("stdout %s\nstderr %s", res.Stdout.Text, res.Stderr.Text)
	assert.Contains(t, res.Stdout.Text, ".bash_profile regular file 444\n.bash_login regular file 444\n")
	assert.Contains(t, res.Stdout.Text, "profile=yes\n")
	assert.Contains(t, res.Stdout.Text, "profile-refused\nlogin-refused\n")
	for _, name := range []string{".bash_profile", ".bash_login"} {
		assert.NoFileExists(t, filepath.Join(home, name))
	}
	b, err := os.ReadFile(filepath.Join(home, ".profile"))
	require.NoError(t, err)
	assert.Equal(t, profile, string(b))
}
