//go:build linux

package execsandbox_test

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// secretHome is a fixture home outside /tmp (a temp root) holding
// credentials with a marker no command output may show, and a workspace
// holding a `.env` (denied at any depth), a `.env.example` (exempt) and a
// symlink to the key.
type secretHome struct {
	home, ws, marker string
	key, aws, env    string
}

// newSecretHome makes the fixture, owned by o (a root test gives it to
// uid 1000 or keeps it root's: commands run as the workspace's owner). It
// also holds `locked/secret`, denied by --deny-read, in a directory of
// mode 0700 that stays root's (or the test user's): an ordinary user's
// command cannot reach it, and its mask must not stop the command either.
func newSecretHome(t *testing.T, o owner) (secretHome, *sandboxpolicy.Service) {
	t.Helper()
	home, err := os.MkdirTemp("/var/tmp", "harness-home-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	require.NoError(t, os.Chmod(home, 0o755))
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	var rnd [12]byte
	_, err = rand.Read(rnd[:])
	require.NoError(t, err)
	s := secretHome{home: home, ws: filepath.Join(base, "ws"), marker: "KEYMARK-" + hex.EncodeToString(rnd[:])}
	s.key = filepath.Join(home, ".ssh", "id_ed25519")
	s.aws = filepath.Join(home, ".aws", "credentials")
	s.env = filepath.Join(s.ws, ".env")
	for _, d := range []string{filepath.Dir(s.key), filepath.Dir(s.aws), s.ws, filepath.Join(s.ws, "sub")} {
		require.NoError(t, os.MkdirAll(d, 0o700))
	}
	require.NoError(t, os.Chmod(s.ws, 0o755))
	require.NoError(t, os.WriteFile(s.key, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n"+s.marker+"\n"), 0o600))
	require.NoError(t, os.WriteFile(s.aws, []byte("[default]\naws_secret_access_key = "+s.marker+"\n"), 0o600))
	require.NoError(t, os.WriteFile(s.env, []byte("TOKEN="+s.marker+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(s.ws, "sub", ".env.local"), []byte("TOKEN="+s.marker+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(s.ws, ".env.example"), []byte("TOKEN=example-value\n"), 0o644))
	require.NoError(t, os.Symlink(s.key, filepath.Join(s.ws, "link")))
	if os.Geteuid() == 0 && o.uid != 0 {
		for d := filepath.Dir(s.ws); d != "/" && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
			require.NoError(t, os.Chmod(d, 0o755))
		}
		require.NoError(t, chownTree(s.ws, o.uid))
		require.NoError(t, chownTree(home, o.uid))
	}
	locked := filepath.Join(home, "locked")
	require.NoError(t, os.Mkdir(locked, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(locked, "secret"), []byte(s.marker), 0o600))
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{
		WorkspaceRoot: s.ws, TempRoots: []string{}, Homes: []string{home}, DenyRead: []string{filepath.Join(locked, "secret")},
	})
	require.NoError(t, err)
	return s, pol
}

// snapshot returns every entry beneath dir with its mode and content, to
// compare before and after: nothing made, nothing changed.
func snapshot(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		line := p + " " + info.Mode().String()
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += " " + string(b)
		}
		out = append(out, line)
		return nil
	}))
	sort.Strings(out)
	return out
}

func requireBwrapAndLandlock(t *testing.T) {
	t.Helper()
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		t.Skip("bubblewrap is not installed")
	}
}

func TestCommandsCannotReadTheDenyReadSet(t *testing.T) {
	longTest(t)
	requireBwrapAndLandlock(t)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) { testCannotRead(t, o) })
	}
}

func testCannotRead(t *testing.T, o owner) {
	s, pol := newSecretHome(t, o)
	r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
	require.NoError(t, err)
	beforeHome, beforeWS := snapshot(t, s.home), snapshot(t, s.ws)
	cases := []struct {
		name, command string
		// shows is what stdout must hold ("" for nothing).
		shows string
	}{
		{"cat the key", "cat " + s.key, ""},
		{"grep the aws credentials", "grep -r aws_secret " + filepath.Dir(s.aws), ""},
		{"list the ssh directory", "ls -la " + filepath.Dir(s.key) + "; ls -A " + filepath.Dir(s.key) + " | wc -l", "0\n"},
		{"find the home", "find " + s.home + " -type f -exec cat {} +", ""},
		{"cat the locked secret", "cat " + s.home + "/locked/secret", ""},
		{"cat through a workspace symlink", "cat link", ""},
		{"tar the ssh directory", "tar c " + filepath.Dir(s.key) + " | base64 -w0", ""},
		{"cat the workspace .env", "cat .env sub/.env.local", ""},
		{"the .env.example stays readable", "cat .env.example", "TOKEN=example-value\n"},
		{"copy the key into the workspace", "cp " + s.key + " stolen; cat stolen", ""},
	}
	for _, mode := range []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite, sandbox.DangerFullAccess} {
		for _, c := range cases {
			t.Run(string(mode)+"/"+c.name, func(t *testing.T) {
				res, err := r.Run(t.Context(), exec.Request{Command: c.command, Workdir: s.ws, Timeout: time.Minute, Policy: carried(pol, mode, s.ws)})
				require.NoError(t, err)
				assert.NotContains(t, res.Stdout.Text, s.marker)
				assert.NotContains(t, res.Stderr.Text, s.marker)
				if c.shows != "" {
					assert.Contains(t, res.Stdout.Text, c.shows, res.Stderr.Text)
				}
				require.NotNil(t, res.Confinement)
				assert.Contains(t, res.Confinement.Masked, filepath.Dir(s.key))
				assert.Contains(t, res.Confinement.Masked, s.env)
				assert.NotContains(t, res.Confinement.Masked, filepath.Join(s.ws, ".env.example"))
			})
		}
	}
	// The denial a command meets says what it is.
	// A file is an empty file of mode 0000; what a directory held is gone.
	res, err := r.Run(t.Context(), exec.Request{Command: "cat .env; cat link; cat " + s.key + "; stat -c '%a %s' .env", Workdir: s.ws, Timeout: time.Minute, Policy: carried(pol, sandbox.WorkspaceWrite, s.ws)})
	require.NoError(t, err)
	assert.Contains(t, res.Stderr.Text, ".env: Permission denied")
	assert.Contains(t, res.Stderr.Text, "link: No such file or directory")
	assert.Contains(t, res.Stderr.Text, s.key+": No such file or directory")
	assert.Equal(t, "0 0\n", res.Stdout.Text)
	// Nothing was made or changed on the host: bytes and modes.
	_ = os.Remove(filepath.Join(s.ws, "stolen")) // an empty copy of the mask, made in workspace-write
	assert.Equal(t, beforeHome, snapshot(t, s.home))
	assert.Equal(t, beforeWS, snapshot(t, s.ws))
}

func TestDenyReadLiftedOnlyForTheApprovedCommand(t *testing.T) {
	requireBwrapAndLandlock(t)
	s, pol := newSecretHome(t, primaryOwner())
	r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
	require.NoError(t, err)
	req := exec.Request{Command: "cat " + s.key + "; cat " + s.aws, Workdir: s.ws, Timeout: time.Minute, Policy: carried(pol, sandbox.DangerFullAccess, s.ws)}
	res, err := r.Run(t.Context(), req)
	require.NoError(t, err)
	assert.NotContains(t, res.Stdout.Text, s.marker)
	req.LiftedReads = []string{s.key}
	res, err = r.Run(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, 1, countOf(res.Stdout.Text, s.marker), "the key and only the key: %s %s", res.Stdout.Text, res.Stderr.Text)
	assert.Contains(t, res.Stdout.Text, "PRIVATE KEY")
	// Lifting is for danger-full-access only: a confined command keeps
	// its masks whatever the request says.
	req.Policy = carried(pol, sandbox.WorkspaceWrite, s.ws)
	res, err = r.Run(t.Context(), req)
	require.NoError(t, err)
	assert.NotContains(t, res.Stdout.Text, s.marker)
}

func TestDangerFullAccessWritesEverywhereWithMasks(t *testing.T) {
	requireBwrapAndLandlock(t)
	s, pol := newSecretHome(t, primaryOwner())
	r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
	require.NoError(t, err)
	outside := filepath.Join(s.home, "written")
	res, err := r.Run(t.Context(), exec.Request{
		Command: "echo x > " + outside + "; echo y > " + s.key + "; echo z > .env", Workdir: s.ws, Timeout: time.Minute,
		Policy: carried(pol, sandbox.DangerFullAccess, s.ws),
	})
	require.NoError(t, err)
	assert.NotEqual(t, 0, res.ExitCode)
	b, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "x\n", string(b))
	// The masks are read-only: the key and the .env are unchanged.
	b, err = os.ReadFile(s.key)
	require.NoError(t, err)
	assert.Contains(t, string(b), s.marker)
	b, err = os.ReadFile(s.env)
	require.NoError(t, err)
	assert.Equal(t, "TOKEN="+s.marker+"\n", string(b))
}

// TestLandlockIsolationHidesDenyReadPaths: the Landlock isolation runs
// commands while deny-read paths exist (a home with ~/.ssh and harness's
// own state directory, issue 36), its domain granting reads around them:
// the key and the `.env` stay unread. A deny-read path inside a writable
// root (the workspace's `.env` under workspace-write) cannot be hidden by
// Landlock, and danger-full-access has no Landlock domain: those are
// refused, as is everything for a root server, whose commands keep
// capabilities that read past Landlock.
func TestLandlockIsolationHidesDenyReadPaths(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
	s, pol := newSecretHome(t, primaryOwner())
	r, err := execsandbox.New(execsandbox.Config{Isolation: execsandbox.IsolationLandlock}, exec.Config{}, pol)
	require.NoError(t, err)
	ran := filepath.Join(s.ws, "ran")
	refused := map[sandbox.Mode]string{sandbox.WorkspaceWrite: "inside a writable root", sandbox.DangerFullAccess: "without the Landlock domain that hides them"}
	if os.Geteuid() == 0 {
		refused[sandbox.ReadOnly] = "keep root's capabilities"
		refused[sandbox.WorkspaceWrite] = "keep root's capabilities"
	}
	for _, mode := range []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite, sandbox.DangerFullAccess} {
		t.Run(string(mode), func(t *testing.T) {
			res, err := r.Run(t.Context(), exec.Request{
				Command: "touch " + ran + "; cat " + s.key + "; cat .env; cat " + s.aws + "; ls -A " + s.home + "; cat sub/.env.local; echo done",
				Workdir: s.ws, Timeout: time.Minute, Policy: carried(pol, mode, s.ws),
			})
			if why, ok := refused[mode]; ok {
				var ee *exec.Error
				require.True(t, errors.As(err, &ee), "%v", err)
				assert.EqualValues(t, exec.CodeUnavailable, ee.Code)
				assert.Contains(t, ee.Message, why)
				assert.Contains(t, ee.Message, "--allow-read")
				assert.NoFileExists(t, ran)
				return
			}
			require.NoError(t, err)
			assert.NotContains(t, res.Stdout.Text+res.Stderr.Text, s.marker)
			assert.Contains(t, res.Stdout.Text, ".ssh\n") // the names stay listable
			assert.True(t, strings.HasSuffix(res.Stdout.Text, "done\n"), res.Stdout.Text)
			// The touch (read-only), the key, the .env, the AWS credentials,
			// the nested .env.
			assert.Equal(t, 5, strings.Count(res.Stderr.Text, "Permission denied"), res.Stderr.Text)
			assert.NoFileExists(t, ran)
			require.NotNil(t, res.Confinement)
			assert.Contains(t, res.Confinement.Masked, filepath.Dir(s.key))
			assert.Contains(t, res.Confinement.Masked, s.env)
		})
	}
	b, err := os.ReadFile(s.key)
	require.NoError(t, err)
	assert.Contains(t, string(b), s.marker)
	// With nothing to hide, it runs.
	pol2, err := sandboxpolicy.New(sandboxpolicy.Config{WorkspaceRoot: filepath.Join(s.ws, "sub"), TempRoots: []string{}, Homes: []string{}, AllowRead: []string{".env.*"}})
	require.NoError(t, err)
	r2, err := execsandbox.New(execsandbox.Config{Isolation: execsandbox.IsolationLandlock}, exec.Config{}, pol2)
	require.NoError(t, err)
	res, err := r2.Run(t.Context(), exec.Request{Command: "echo ok", Workdir: filepath.Join(s.ws, "sub"), Timeout: time.Minute, Policy: carried(pol2, sandbox.WorkspaceWrite, filepath.Join(s.ws, "sub"))})
	require.NoError(t, err)
	assert.Equal(t, "ok\n", res.Stdout.Text)
}

// BenchmarkDenyReadSearch measures one read-only `true` in a workspace of
// 20,000 files in 200 directories (the search's cache warm after the first
// command), with the default deny-read set over a fixture home (anchored
// patterns expanded, the workspace walked for `.env`), and with nothing to
// look for (no home, the any-depth defaults dropped).
func BenchmarkDenyReadSearch(b *testing.B) {
	base, err := filepath.EvalSymlinks(b.TempDir())
	require.NoError(b, err)
	ws := filepath.Join(base, "ws")
	for d := range 200 {
		dir := filepath.Join(ws, "d"+strconv.Itoa(d))
		require.NoError(b, os.MkdirAll(dir, 0o755))
		for f := range 100 {
			require.NoError(b, os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(f)), nil, 0o644))
		}
	}
	require.NoError(b, os.WriteFile(filepath.Join(ws, "d7", ".env"), []byte("T=1\n"), 0o600))
	home, err := os.MkdirTemp("/var/tmp", "harness-home-")
	require.NoError(b, err)
	b.Cleanup(func() { _ = os.RemoveAll(home) })
	require.NoError(b, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	for _, c := range []struct {
		name string
		cfg  sandboxpolicy.Config
	}{
		{"defaults", sandboxpolicy.Config{WorkspaceRoot: ws, TempRoots: []string{}, Homes: []string{home}}},
		{"nothing to look for", sandboxpolicy.Config{WorkspaceRoot: ws, TempRoots: []string{}, Homes: []string{}, AllowRead: []string{".env", ".env.*"}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			pol, err := sandboxpolicy.New(c.cfg)
			require.NoError(b, err)
			r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
			require.NoError(b, err)
			for b.Loop() {
				res, err := r.Run(b.Context(), exec.Request{Command: "true", Workdir: ws, Policy: carried(pol, sandbox.ReadOnly, ws)})
				if err != nil || res.ExitCode != 0 {
					b.Fatal(err, res.Stderr.Text)
				}
			}
		})
	}
}

// TestLandlockIsolationTempDir (issue 36 review): the Landlock isolation's
// commands get TMPDIR in their temp, as bubblewrap's do (go build, pip and
// npm make their scratch there; the host's /tmp is not writable to them).
func TestLandlockIsolationTempDir(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	ws, tmp := filepath.Join(base, "ws"), filepath.Join(base, "tmp")
	require.NoError(t, os.Mkdir(ws, 0o755))
	require.NoError(t, os.Mkdir(tmp, 0o755))
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{WorkspaceRoot: ws, TempRoots: []string{tmp}, Homes: []string{}, AllowRead: []string{".env", ".env.*"}})
	require.NoError(t, err)
	r, err := execsandbox.New(execsandbox.Config{Isolation: execsandbox.IsolationLandlock}, exec.Config{}, pol)
	require.NoError(t, err)
	res, err := r.Run(t.Context(), exec.Request{Command: `echo "$TMPDIR" && echo x > "$TMPDIR/made"`, Workdir: ws, Timeout: time.Minute, Policy: carried(pol, sandbox.WorkspaceWrite, ws)})
	require.NoError(t, err)
	assert.Equal(t, tmp+"\n", res.Stdout.Text, res.Stderr.Text)
	b, err := os.ReadFile(filepath.Join(tmp, "made"))
	require.NoError(t, err)
	assert.Equal(t, "x\n", string(b))
}

// TestLandlockIsolationHidesDevPaths (issue 36 review): a deny-read path
// under /dev (a file in /dev/shm) is hidden under the Landlock isolation,
// whose commands see the host's /dev (bubblewrap's see a fresh one), and
// one under /proc refuses the command (reads around it cannot be granted
// ahead of the processes that come and go).
func TestLandlockIsolationHidesDevPaths(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
	if os.Geteuid() == 0 {
		t.Skip("a root server's commands are refused under the Landlock isolation while a deny-read path exists (TestLandlockIsolationHidesDenyReadPaths); the unprivileged pass runs this")
	}
	shm, err := os.CreateTemp("/dev/shm", "harness-deny-")
	if err != nil {
		t.Skip("no /dev/shm: ", err)
	}
	t.Cleanup(func() { _ = os.Remove(shm.Name()) })
	marker := "SHMMARK-" + strconv.Itoa(os.Getpid())
	_, err = shm.WriteString(marker + "\n")
	require.NoError(t, err)
	require.NoError(t, shm.Close())
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for _, c := range []struct {
		deny    string
		refused bool
	}{{shm.Name(), false}, {"/proc/self/environ", true}} {
		pol, err := sandboxpolicy.New(sandboxpolicy.Config{WorkspaceRoot: ws, TempRoots: []string{}, Homes: []string{}, AllowRead: []string{".env", ".env.*"}, DenyRead: []string{c.deny}})
		require.NoError(t, err)
		r, err := execsandbox.New(execsandbox.Config{Isolation: execsandbox.IsolationLandlock}, exec.Config{}, pol)
		require.NoError(t, err)
		res, err := r.Run(t.Context(), exec.Request{Command: "cat " + shm.Name() + "; ls /dev/shm >/dev/null && echo ran", Workdir: ws, Timeout: time.Minute, Policy: carried(pol, sandbox.ReadOnly, ws)})
		if c.refused {
			var ee *exec.Error
			require.True(t, errors.As(err, &ee), "%v", err)
			assert.Contains(t, ee.Message, "/proc")
			continue
		}
		require.NoError(t, err)
		assert.NotContains(t, res.Stdout.Text+res.Stderr.Text, marker)
		assert.Equal(t, "ran\n", res.Stdout.Text)
		assert.Contains(t, res.Stderr.Text, "Permission denied")
	}
}

// TestDenyReadSymlinkedEnv (issue 36 review): a `.env` that is a symlink to
// a file elsewhere, whose own name no pattern denies, is hidden from a
// command at its target, by the bubblewrap view and by the Landlock
// isolation alike.
func TestDenyReadSymlinkedEnv(t *testing.T) {
	s, pol := newSecretHome(t, primaryOwner())
	secret := filepath.Join(s.home, "plain-secret")
	require.NoError(t, os.WriteFile(secret, []byte("TOKEN="+s.marker+"\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(s.ws, "lnk"), 0o755))
	require.NoError(t, os.Symlink(secret, filepath.Join(s.ws, "lnk", ".env")))
	for _, cfg := range hidingIsolations() {
		t.Run(cmp.Or(cfg.Isolation, execsandbox.IsolationBwrap), func(t *testing.T) {
			r, err := execsandbox.New(cfg, exec.Config{}, pol)
			require.NoError(t, err)
			res, err := r.Run(t.Context(), exec.Request{Command: "cat lnk/.env; echo done", Workdir: s.ws, Timeout: time.Minute, Policy: carried(pol, sandbox.ReadOnly, s.ws)})
			var ee *exec.Error
			if errors.As(err, &ee) && ee.Code == exec.CodeUnavailable && cfg.Isolation == "" {
				t.Skip("bubblewrap cannot run here: " + ee.Message)
			}
			require.NoError(t, err)
			assert.NotContains(t, res.Stdout.Text+res.Stderr.Text, s.marker)
			assert.Equal(t, "done\n", res.Stdout.Text)
			require.NotNil(t, res.Confinement)
			assert.Contains(t, res.Confinement.Masked, secret)
		})
	}
}

// TestDenyReadLinkOutOfADeniedDirectory (issue 36 review): a key kept
// elsewhere (a dotfiles repository) and linked into ~/.ssh is the denied
// file: a command reads it neither through the link nor by its own path,
// under the bubblewrap view and the Landlock isolation alike; however many
// entries another denied directory sorting first holds (issue 34's review:
// ~/.aws filled with 5,000 files hid the link from a bound over all), or a
// directory sorting first in its own (~/.kube/cache/http/ hid
// ~/.kube/config's link).
func TestDenyReadLinkOutOfADeniedDirectory(t *testing.T) {
	s, pol := newSecretHome(t, primaryOwner())
	kept := filepath.Join(s.home, "dotfiles", "id_dot")
	require.NoError(t, os.MkdirAll(filepath.Dir(kept), 0o755))
	// ~/.aws sorting first, and ~/.ssh/aaa/ inside the key's own denied
	// directory, with 5,000 files each.
	for _, d := range []string{".aws", ".ssh/aaa"} {
		require.NoError(t, os.MkdirAll(filepath.Join(s.home, d), 0o700))
		for i := range 5000 {
			require.NoError(t, os.WriteFile(filepath.Join(s.home, d, fmt.Sprintf("f%d", i)), nil, 0o600))
		}
	}
	require.NoError(t, os.WriteFile(kept, []byte(s.marker+"\n"), 0o644))
	link := filepath.Join(filepath.Dir(s.key), "id_dot")
	require.NoError(t, os.Symlink(kept, link))
	// Links to what every command needs, or to the home itself (the
	// attack review: ~/.kube/x -> /usr failed every command): not masked.
	require.NoError(t, os.Symlink("/usr", filepath.Join(filepath.Dir(s.key), "sys")))
	require.NoError(t, os.Symlink(s.home, filepath.Join(filepath.Dir(s.key), "home")))
	for _, cfg := range hidingIsolations() {
		t.Run(cmp.Or(cfg.Isolation, execsandbox.IsolationBwrap), func(t *testing.T) {
			r, err := execsandbox.New(cfg, exec.Config{}, pol)
			require.NoError(t, err)
			res, err := r.Run(t.Context(), exec.Request{Command: "cat " + link + "; cat " + kept + "; /usr/bin/env true && echo done", Workdir: filepath.Join(s.ws, "sub"), Timeout: time.Minute, Policy: carried(pol, sandbox.ReadOnly, filepath.Join(s.ws, "sub"))})
			var ee *exec.Error
			if errors.As(err, &ee) && ee.Code == exec.CodeUnavailable && cfg.Isolation == "" {
				t.Skip("bubblewrap cannot run here: " + ee.Message)
			}
			require.NoError(t, err)
			assert.NotContains(t, res.Stdout.Text+res.Stderr.Text, s.marker)
			assert.Equal(t, "done\n", res.Stdout.Text)
			require.NotNil(t, res.Confinement)
			assert.Contains(t, res.Confinement.Masked, kept)
			assert.NotContains(t, res.Confinement.Masked, "/usr")
			assert.NotContains(t, res.Confinement.Masked, s.home)
		})
	}
}

// hidingIsolations are the isolations that hide deny-read paths from this
// test's user: bubblewrap, and the Landlock isolation but for root (whose
// commands it refuses while one exists).
func hidingIsolations() []execsandbox.Config {
	out := []execsandbox.Config{{}}
	if os.Geteuid() != 0 && subproc.Probe().LandlockABI >= 1 {
		out = append(out, execsandbox.Config{Isolation: execsandbox.IsolationLandlock})
	}
	return out
}

// TestLandlockIsolationWorkspaceWrite (issue 36): the documented fallback
// runs commands under workspace-write on a machine where ~/.ssh and
// harness's own state directory (~/.local/state/harness, made at the
// first start) exist and the workspace holds no .env: a file the command
// writes lands in the workspace, and neither the key nor the audit log is
// read. A root server's commands keep capabilities that read past
// Landlock: refused.
func TestLandlockIsolationWorkspaceWrite(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
	s, pol := newSecretHome(t, primaryOwner())
	require.NoError(t, os.Remove(s.env))
	require.NoError(t, os.Remove(filepath.Join(s.ws, "sub", ".env.local")))
	state := filepath.Join(s.home, ".local", "state", "harness")
	require.NoError(t, os.MkdirAll(state, 0o700))
	audit := filepath.Join(state, "audit.jsonl")
	require.NoError(t, os.WriteFile(audit, []byte(`{"secret":"`+s.marker+`"}`+"\n"), 0o600))
	if os.Geteuid() == 0 && primaryOwner().uid != 0 {
		require.NoError(t, chownTree(s.home, primaryOwner().uid))
	}
	r, err := execsandbox.New(execsandbox.Config{Isolation: execsandbox.IsolationLandlock}, exec.Config{}, pol)
	require.NoError(t, err)
	res, err := r.Run(t.Context(), exec.Request{
		Command: "echo written > out.txt; cat " + s.key + "; cat " + audit + "; ls -A " + state + "; echo done",
		Workdir: s.ws, Timeout: time.Minute, Policy: carried(pol, sandbox.WorkspaceWrite, s.ws),
	})
	if os.Geteuid() == 0 {
		var ee *exec.Error
		require.True(t, errors.As(err, &ee), "%v", err)
		assert.Contains(t, ee.Message, "keep root's capabilities")
		assert.NoFileExists(t, filepath.Join(s.ws, "out.txt"))
		return
	}
	require.NoError(t, err)
	assert.NotContains(t, res.Stdout.Text+res.Stderr.Text, s.marker)
	assert.True(t, strings.HasSuffix(res.Stdout.Text, "done\n"), res.Stdout.Text)
	assert.Equal(t, 2, strings.Count(res.Stderr.Text, "Permission denied"), res.Stderr.Text)
	b, err := os.ReadFile(filepath.Join(s.ws, "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "written\n", string(b))
	require.NotNil(t, res.Confinement)
	assert.Contains(t, res.Confinement.Masked, state)
}

// TestDenyReadLinksOnlyInDirectoriesThatWere (the attack reviews of issue
// 34): links are followed only in the anchored denied directories that
// existed at the runner's first search. A `~/.kube` made later, and a
// `.env/` directory (matched at any depth) in the workspace, whose links
// name the workspace's own src/ (or /usr, or another principal's
// workspace), mask nothing: src/ stays readable and writable to commands.
func TestDenyReadLinksOnlyInDirectoriesThatWere(t *testing.T) {
	o := primaryOwner()
	s, pol := newSecretHome(t, o)
	src := filepath.Join(s.ws, "src")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n"), 0o644))
	if os.Geteuid() == 0 && o.uid != 0 {
		require.NoError(t, chownTree(s.ws, o.uid))
	}
	run := runIn(t, pol, s.ws)
	run("true")
	kube := filepath.Join(s.home, ".kube")
	require.NoError(t, os.Mkdir(kube, 0o700))
	require.NoError(t, os.Symlink(src, filepath.Join(kube, "x")))
	res := run("mkdir -p lib/.env && ln -s ../../src lib/.env/x && echo linked")
	require.Contains(t, res.Stdout.Text, "linked", res.Stderr.Text)
	res = run("cat src/main.go && echo more >> src/main.go && echo done")
	assert.Equal(t, "package main\ndone\n", res.Stdout.Text, res.Stderr.Text)
	assert.NotContains(t, res.Confinement.Masked, src)
	got, err := os.ReadFile(filepath.Join(src, "main.go"))
	require.NoError(t, err)
	assert.Equal(t, "package main\nmore\n", string(got))
}

// TestDenyReadLinkChainRepointed (the attack review of issue 34): with
// `~/.ssh/id_chain -> ws/current -> ssh2/key`, a command that re-points the
// intermediate link `current` (in its workspace) does not free the key for
// the next command: what a denied link led to stays masked while it is the
// same file at the same path.
func TestDenyReadLinkChainRepointed(t *testing.T) {
	o := primaryOwner()
	s, pol := newSecretHome(t, o)
	key := filepath.Join(s.ws, "ssh2", "key")
	require.NoError(t, os.MkdirAll(filepath.Dir(key), 0o755))
	require.NoError(t, os.WriteFile(key, []byte(s.marker+"\n"), 0o644))
	require.NoError(t, os.Symlink("ssh2/key", filepath.Join(s.ws, "current")))
	require.NoError(t, os.Symlink(filepath.Join(s.ws, "current"), filepath.Join(filepath.Dir(s.key), "id_chain")))
	if os.Geteuid() == 0 && o.uid != 0 {
		require.NoError(t, chownTree(s.ws, o.uid))
	}
	runs := runIn(t, pol, s.ws)
	run := func(command string) string {
		res := runs(command)
		return res.Stdout.Text + res.Stderr.Text
	}
	assert.NotContains(t, run("cat ssh2/key; echo done"), s.marker)
	out := run("ln -sfn nothing current && echo relinked")
	require.Contains(t, out, "relinked")
	assert.NotContains(t, run("cat ssh2/key; echo done"), s.marker, "the key read once the chain was re-pointed")
}

// runIn returns a run of a command in ws under workspace-write by one
// bubblewrap runner of pol; bubblewrap that cannot run here skips the test.
func runIn(t *testing.T, pol *sandboxpolicy.Service, ws string) func(command string) exec.Result {
	t.Helper()
	r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
	require.NoError(t, err)
	return func(command string) exec.Result {
		t.Helper()
		res, err := r.Run(t.Context(), exec.Request{Command: command, Workdir: ws, Timeout: time.Minute, Policy: carried(pol, sandbox.WorkspaceWrite, ws)})
		var ee *exec.Error
		if errors.As(err, &ee) && ee.Code == exec.CodeUnavailable {
			t.Skip("bubblewrap cannot run here: " + ee.Message)
		}
		require.NoError(t, err)
		return res
	}
}
