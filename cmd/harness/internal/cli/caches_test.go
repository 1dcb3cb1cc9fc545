package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/cli"
	"github.com/dsh-go/harness/internal/subproc"
)

// fakeHome returns a HOME outside the temp roots (/tmp is writable under
// workspace-write anyway), set as the process's HOME for the test, with the
// directories dirs made beneath it.
func fakeHome(t *testing.T, dirs ...string) string {
	t.Helper()
	home, err := os.MkdirTemp("/var/tmp", "harness-home-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	home, err = filepath.EvalSymlinks(home)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(home, 0o755))
	for _, d := range dirs {
		require.NoError(t, os.MkdirAll(filepath.Join(home, d), 0o755))
	}
	t.Setenv("HOME", home)
	return home
}

// TestToolchainCachesPolicy checks that --toolchain-caches (and its
// variable and config key) makes exactly the caches present beneath HOME
// writable roots, a symlinked one canonical, and that harness policy lists
// them.
func TestToolchainCachesPolicy(t *testing.T) {
	l := newLayout(t)
	home := fakeHome(t, "go/pkg/mod", ".npm", ".cargo/registry", ".cargo/bin", ".gradle", ".m2")
	// ~/.cache is a symlink: the go build cache's root is its target.
	target := filepath.Join(home, "real-cache")
	require.NoError(t, os.MkdirAll(filepath.Join(target, "go-build"), 0o755))
	require.NoError(t, os.Symlink(target, filepath.Join(home, ".cache")))
	cfgFile := filepath.Join(l.base, "harness.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("toolchain-caches: true\n"), 0o644))

	base := []string{"policy", "--json", "--mode", "workspace-write", "--workspace", l.ws, "--temp-root", l.tmp}
	wantCaches := []map[string]any{
		{"tool": "go modules", "path": filepath.Join(home, "go/pkg/mod")},
		{"tool": "go build", "path": filepath.Join(home, ".cache/go-build")},
		{"tool": "npm", "path": filepath.Join(home, ".npm")},
		{"tool": "cargo registry", "path": filepath.Join(home, ".cargo/registry")},
	}
	// The temp root is where each session's own temp area is made
	// (sessionTemp), not a writable root itself.
	wantRoots := []string{l.ws, filepath.Join(home, "go/pkg/mod"), filepath.Join(target, "go-build"), filepath.Join(home, ".npm"), filepath.Join(home, ".cargo/registry")}
	for _, c := range []struct {
		name string
		args []string
		vars map[string]string
		on   bool
	}{
		{name: "off by default", args: base},
		{name: "the flag", args: append(base, "--toolchain-caches"), on: true},
		{name: "the variable", args: base, vars: map[string]string{"HARNESS_TOOLCHAIN_CACHES": "true"}, on: true},
		{name: "the config key", args: append(base, "--config", cfgFile), on: true},
		{name: "the flag wins over the file", args: append(base, "--config", cfgFile, "--toolchain-caches=false")},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, c.args, "", false, c.vars)
			require.EqualValues(t, cli.ExitOK, r.code, r.stderr)
			var rep struct {
				WritableRoots   []string         `json:"writableRoots"`
				SessionTemp     string           `json:"sessionTemp"`
				ToolchainCaches []map[string]any `json:"toolchainCaches"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
			assert.Equal(t, l.tmp, rep.SessionTemp)
			if !c.on {
				assert.Equal(t, []string{l.ws}, rep.WritableRoots)
				assert.Empty(t, rep.ToolchainCaches)
				return
			}
			assert.Equal(t, wantRoots, rep.WritableRoots)
			assert.Equal(t, wantCaches, rep.ToolchainCaches)
		})
	}

	r := runCLI(t, []string{"policy", "--mode", "workspace-write", "--workspace", l.ws, "--temp-root", l.tmp, "--toolchain-caches"}, "", false, nil)
	require.EqualValues(t, cli.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "toolchain caches (--toolchain-caches; writable under workspace-write):\n"+
		"  go modules:     "+filepath.Join(home, "go/pkg/mod")+"\n"+
		"  go build:       "+filepath.Join(home, ".cache/go-build")+"\n"+
		"  npm:            "+filepath.Join(home, ".npm")+"\n"+
		"  cargo registry: "+filepath.Join(home, ".cargo/registry")+"\n"+
		"protected paths")
	assert.NotContains(t, r.stdout, ".cargo/bin", "the host's programs stay read-only")
	assert.NotContains(t, r.stdout, ".gradle", "a missing cache is no root")

	// A cache variable counts when commands get it (--exec-env), as the
	// toolchain in a command would see it; otherwise the default stands.
	gocache := filepath.Join(home, "elsewhere-go-build")
	require.NoError(t, os.Mkdir(gocache, 0o755))
	t.Setenv("GOCACHE", gocache)
	for _, passed := range []bool{false, true} {
		args := append(slices.Clone(base), "--toolchain-caches")
		want := filepath.Join(home, ".cache/go-build")
		if passed {
			args, want = append(args, "--exec-env", "GOCACHE"), gocache
		}
		r := runCLI(t, args, "", false, nil)
		require.EqualValues(t, cli.ExitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, `"path": "`+want+`",
      "tool": "go build"`, "--exec-env GOCACHE passed: %v", passed)
	}
}

// TestToolchainCachesGoBuild runs a real go build through the confined
// runner with its caches in a fresh HOME: refused without the flag (the
// build cache is read-only), built with it, the cache filled on disk.
func TestToolchainCachesGoBuild(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain on PATH")
	}
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
	l := newLayout(t)
	home := fakeHome(t, ".cache/go-build", "go/pkg/mod")
	require.NoError(t, os.WriteFile(filepath.Join(l.ws, "go.mod"), []byte("module example.com/hello\n\ngo 1.21\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(l.ws, "main.go"), []byte("package main\n\nfunc main() { println(\"built\") }\n"), 0o644))
	// The build's temp area is the case's own: /tmp is shared with other
	// processes, whose protected paths come and go while the runner looks.
	t.Setenv("TMPDIR", l.tmp)
	args := func(extra ...string) []string {
		return append([]string{
			"call", "exec", "--args", `{"command":"go build -buildvcs=false -o hello . && ./hello","timeout_ms":300000}`,
			"--mode", "workspace-write", "--workspace", l.ws, "--temp-root", l.tmp,
		}, extra...)
	}
	isolation := []string{}
	if _, err := exec.LookPath("bwrap"); err != nil {
		isolation = []string{"--exec-isolation", "landlock"}
	}

	r := runCLI(t, args(isolation...), "", false, nil)
	res := parseResult(t, r.stdout)
	require.Contains(t, res.text(), "[sandbox: file access denied under workspace-write mode]", "without the flag the build cache is read-only, and the denial is marked: %s", res.text())
	assert.Contains(t, res.text(), "exit code 1 ")
	assert.Contains(t, res.text(), "failed to initialize build cache at "+filepath.Join(home, ".cache/go-build"))
	_, err := os.Stat(filepath.Join(l.ws, "hello"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing was built")
	entries, err := os.ReadDir(filepath.Join(home, ".cache/go-build"))
	require.NoError(t, err)
	assert.Empty(t, entries, "the cache is untouched")

	r = runCLI(t, args(append(isolation, "--toolchain-caches")...), "", false, nil)
	res = parseResult(t, r.stdout)
	require.True(t, strings.HasPrefix(res.text(), "exit code 0 "), "with the flag the build runs: %s", res.text())
	assert.Contains(t, res.text(), "built")
	st, err := os.Stat(filepath.Join(l.ws, "hello"))
	require.NoError(t, err)
	assert.NotZero(t, st.Mode().Perm()&0o100, "the program is executable")
	entries, err = os.ReadDir(filepath.Join(home, ".cache/go-build"))
	require.NoError(t, err)
	assert.NotEmpty(t, entries, "the build cache was written")
}
