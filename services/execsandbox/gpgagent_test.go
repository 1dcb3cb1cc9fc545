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
	for _, tool := range []string{"gpg", "gpgconf", "gpg-agent", "git"} {
		if _, err := osexec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (Debian's gnupg and git packages)", tool)
		}
	}
	home := filepath.Join(fixtures.OutsideDir(t), "home")
	require.NoError(t, os.Mkdir(home, 0o700))
	t.Setenv("HOME", home)
	t.Setenv("GNUPGHOME", "")
	require.NoError(t, os.Unsetenv("GNUPGHOME"))
	gpg(t, home, "--batch", "--pinentry-mode", "loopback", "--passphrase", "", "--quick-gen-key", "Sandbox Test <sandbox@example.com>", "ed25519", "sign", "never")
	t.Cleanup(func() { _ = osexec.Command("gpgconf", "--kill", "gpg-agent").Run() })
	return home
}

func gpg(t *testing.T, home string, args ...string) string {
	t.Helper()
	cmd := osexec.Command("gpg", args...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "gpg %v: %s", args, out)
	return string(out)
}

// privateKeys returns the bytes of every file in the GnuPG home's
// private-keys-v1.d, by name.
func privateKeys(t *testing.T, home string) map[string]string {
	t.Helper()
	dir := filepath.Join(home, ".gnupg", "private-keys-v1.d")
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
	home := gpgHome(t)
	keys := privateKeys(t, home)
	agent, err := gpgagent.Find(t.Context())
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, ".gnupg"), agent.Home)
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
ls -A ~/.gnupg/private-keys-v1.d | wc -l
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
	assert.Equal(t, keys, privateKeys(t, home))
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
