//go:build linux

package execsandbox_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"golang.org/x/sys/unix"

	fixtures "github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// longTest marks t as one of the package's long tests, which run beside
// each other (t.Parallel) once the others have ended: they mostly wait for
// commands, timeouts and sleeps, or loop for a fixed time, so side by side
// the package takes minutes less (issue 37). A long test changes nothing
// process-wide (no t.Setenv) and finds its own processes by a marker of
// its own.
func longTest(t *testing.T) { t.Parallel() }

func TestMain(m *testing.M) {
	if subproc.IsHelper(os.Args) {
		os.Exit(subproc.Main())
	}
	os.Exit(m.Run())
}

// fixture is a workspace, an extra writable root and an outside directory,
// none of them under a temp root (the temp roots are injected as none).
type fixture struct{ ws, cache, outside string }

func newFixture(t *testing.T) (fixture, *sandboxpolicy.Service) {
	t.Helper()
	return newFixtureWith(t, nil)
}

// newFixtureWith is newFixture whose policy configuration edit changes
// first (nil: none).
func newFixtureWith(t *testing.T, edit func(*sandboxpolicy.Config)) (fixture, *sandboxpolicy.Service) {
	t.Helper()
	// Removed at the end with retries: another test's full-access command
	// may hold a mount point in it for milliseconds (fixture.TempDir).
	base := fixtures.TempDir(t)
	f := fixture{filepath.Join(base, "ws"), filepath.Join(base, "cache"), filepath.Join(base, "outside")}
	for _, d := range []string{f.ws, f.cache, f.outside} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	// No home: the server's own credentials (root's .npmrc) would make
	// --exec-isolation landlock refuse every command; deny-read has tests
	// of its own (denyread_test.go).
	cfg := sandboxpolicy.Config{WorkspaceRoot: f.ws, TempRoots: []string{}, WritableRoots: []string{f.cache}, Homes: []string{}}
	if edit != nil {
		edit(&cfg)
	}
	pol, err := sandboxpolicy.New(cfg)
	require.NoError(t, err)
	return f, pol
}

func TestRunFollowsThePolicy(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
	f, pol := newFixture(t)
	r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
	require.NoError(t, err)
	cases := []struct {
		name   string
		mode   sandbox.Mode
		target string
		lands  bool
	}{
		{"workspace-write: the workspace lands", sandbox.WorkspaceWrite, f.ws + "/a", true},
		{"workspace-write: an extra writable root lands", sandbox.WorkspaceWrite, f.cache + "/a", true},
		{"workspace-write: outside is denied", sandbox.WorkspaceWrite, f.outside + "/a", false},
		{"read-only: the workspace is denied", sandbox.ReadOnly, f.ws + "/b", false},
		{"danger-full-access: outside lands", sandbox.DangerFullAccess, f.outside + "/c", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := r.Run(t.Context(), exec.Request{
				Command: "echo x > " + c.target, Workdir: f.ws, Timeout: time.Minute,
				Policy: carried(pol, c.mode, f.ws),
			})
			require.NoError(t, err)
			if c.lands {
				assert.EqualValues(t, 0, res.ExitCode, res.Stderr.Text)
				b, err := os.ReadFile(c.target)
				require.NoError(t, err)
				assert.Equal(t, "x\n", string(b))
			} else {
				assert.NotEqual(t, 0, res.ExitCode)
				// bubblewrap's read-only view answers first; Landlock's
				// refusal is "Permission denied".
				assert.Regexp(t, "Read-only file system|Permission denied", res.Stderr.Text)
				assert.NoFileExists(t, c.target)
			}
		})
	}
}

func TestRunRefusesWithoutAPolicy(t *testing.T) {
	f, pol := newFixture(t)
	r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
	require.NoError(t, err)
	for _, p := range []*sandbox.ExecutionPolicy{nil, {Mode: "host-root", WorkspaceRoot: f.ws}} {
		_, err := r.Run(t.Context(), exec.Request{Command: "echo x > " + f.outside + "/a", Workdir: f.ws, Policy: p})
		var ee *exec.Error
		require.True(t, errors.As(err, &ee), "%v", err)
		assert.EqualValues(t, exec.CodeInvalidRequest, ee.Code)
	}
	assert.NoFileExists(t, f.outside+"/a")
}

func TestNewNeedsThePolicyService(t *testing.T) {
	_, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, nil)
	require.Error(t, err)
}

func TestModule(t *testing.T) {
	_, pol := newFixture(t)
	var r exec.Runner
	app := fxtest.New(t, fx.Supply(pol), execsandbox.Module, fx.Populate(&r))
	app.RequireStart().RequireStop()
	assert.True(t, r.Confines())
}

// BenchmarkRun measures one `true`: danger-full-access with the deny-read
// masks (bubblewrap, inner stage, shell) and confined (workspace-write:
// bubblewrap, inner stage with Landlock and seccomp, shell); cpu-ms/op is
// the CPU time of the runner and its children (getrusage's user and
// system time, self and children), the figure issue 34 compares with bare
// bubblewrap's. TMPDIR places the workspace (this disk's /tmp makes a
// directory 15x slower than /var/tmp does).
func BenchmarkRun(b *testing.B) {
	base, err := filepath.EvalSymlinks(b.TempDir())
	require.NoError(b, err)
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{WorkspaceRoot: base, TempRoots: []string{}})
	require.NoError(b, err)
	r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
	require.NoError(b, err)
	for _, c := range []struct {
		name string
		mode sandbox.Mode
	}{
		{"danger-full-access (bubblewrap, deny-read masks)", sandbox.DangerFullAccess},
		{"workspace-write", sandbox.WorkspaceWrite},
	} {
		b.Run(c.name, func(b *testing.B) {
			before := cpuTime(b)
			for b.Loop() {
				res, err := r.Run(b.Context(), exec.Request{Command: "true", Workdir: base, Policy: carried(pol, c.mode, base)})
				if err != nil || res.ExitCode != 0 {
					b.Fatal(err, res.Stderr.Text)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-before)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the user and system time of this process and its waited-for
// children so far.
func cpuTime(b *testing.B) time.Duration {
	var total time.Duration
	for _, who := range []int{unix.RUSAGE_SELF, unix.RUSAGE_CHILDREN} {
		var ru unix.Rusage
		require.NoError(b, unix.Getrusage(who, &ru))
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total
}

// TestRunKeepsProtectedPathsReadOnly: under workspace-write a command
// cannot write the version-control metadata inside the workspace (a .git
// directory, a nested repository's, a gitdir a .git file points to) nor a
// --protect pattern's match; the rest of the workspace stays writable.
func TestRunKeepsProtectedPathsReadOnly(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
	if !subproc.MountNamespace() {
		t.Skip("this kernel refuses a private mount namespace: protected paths are not carved out for commands")
	}
	f, _ := newFixture(t)
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{WorkspaceRoot: f.ws, TempRoots: []string{}, Protect: []string{"*.pem"}})
	require.NoError(t, err)
	r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
	require.NoError(t, err)
	for _, d := range []string{".git/hooks", "sub/.git", "wt", "mod/gitdir"} {
		require.NoError(t, os.MkdirAll(filepath.Join(f.ws, d), 0o755))
	}
	files := map[string]string{
		".git/config":     "[core]\n",
		"sub/.git/config": "[core]\n",
		"wt/.git":         "gitdir: ../mod/gitdir\n",
		"mod/gitdir/HEAD": "ref: refs/heads/main\n",
		"key.pem":         "secret\n",
		"notes.txt":       "old\n",
	}
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(f.ws, name), []byte(body), 0o644))
	}
	cases := []struct {
		name, command, path string
		lands               bool
	}{
		{"appending to .git/config is refused", "echo x >> .git/config", ".git/config", false},
		{"a new hook is refused", "touch .git/hooks/new", ".git/hooks/new", false},
		{"a nested repository's .git is refused", "echo x >> sub/.git/config", "sub/.git/config", false},
		{"replacing a .git file is refused", "echo 'gitdir: /tmp' > wt/.git", "wt/.git", false},
		{"the gitdir a .git file points to is refused", "echo x >> mod/gitdir/HEAD", "mod/gitdir/HEAD", false},
		{"a --protect match is refused", "echo x >> key.pem", "key.pem", false},
		{"removing .git/config is refused", "rm -f .git/config", ".git/config", false},
		{"a write elsewhere lands", "echo new >> notes.txt", "notes.txt", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, statErr := os.ReadFile(filepath.Join(f.ws, c.path))
			res, err := r.Run(t.Context(), exec.Request{
				Command: c.command, Workdir: f.ws, Timeout: time.Minute,
				Policy: carried(pol, sandbox.WorkspaceWrite, f.ws),
			})
			require.NoError(t, err)
			after, afterErr := os.ReadFile(filepath.Join(f.ws, c.path))
			if c.lands {
				assert.EqualValues(t, 0, res.ExitCode, res.Stderr.Text)
				require.NoError(t, afterErr)
				assert.Equal(t, string(before)+"new\n", string(after))
				return
			}
			assert.NotEqual(t, 0, res.ExitCode)
			assert.Contains(t, res.Stderr.Text, "Read-only file system")
			if statErr != nil {
				assert.NoFileExists(t, filepath.Join(f.ws, c.path))
			} else {
				require.NoError(t, afterErr)
				assert.Equal(t, string(before), string(after))
			}
		})
	}
}
