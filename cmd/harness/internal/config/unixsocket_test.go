package config_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listen makes a Unix socket at dir/name and returns its path.
func listen(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	l, err := net.Listen("unix", p)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return p
}

// TestUnixSocketPaths: --unix-socket is repeatable, comes from the
// environment (a path list) and the YAML file too, is made absolute and
// clean, and must name a socket that exists at start (under --exec
// sandbox); a bad one is an error naming its source and what is wrong.
func TestUnixSocketPaths(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	a, b := listen(t, dir, "a.sock"), listen(t, dir, "b.sock")
	regular := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(regular, nil, 0o600))
	require.NoError(t, os.Symlink(a, filepath.Join(dir, "link")))
	sep := string(os.PathListSeparator)

	good := []struct {
		name string
		args []string
		vars map[string]string
		want []string
	}{
		{"none by default", nil, nil, nil},
		{"repeatable, in order", []string{"--unix-socket", b, "--unix-socket", a}, nil, []string{b, a}},
		{"relative, made absolute against the working directory", []string{"--unix-socket", "a.sock"}, nil, []string{a}},
		{"cleaned", []string{"--unix-socket", dir + "/x/../b.sock"}, nil, []string{b}},
		{"a symlink to a socket is kept as given", []string{"--unix-socket", filepath.Join(dir, "link")}, nil, []string{filepath.Join(dir, "link")}},
		{"HARNESS_UNIX_SOCKET is a path list", nil, map[string]string{"HARNESS_UNIX_SOCKET": a + sep + b}, []string{a, b}},
		{"the flag replaces the variable", []string{"--unix-socket", b}, map[string]string{"HARNESS_UNIX_SOCKET": a}, []string{b}},
		{"YAML list", []string{"--config", writeYAML(t, "unix-socket: ["+a+", "+b+"]\n")}, nil, []string{a, b}},
		{"not checked without the sandbox runner", []string{"--exec", "off", "--unix-socket", filepath.Join(dir, "gone")}, nil, []string{filepath.Join(dir, "gone")}},
	}
	for _, c := range good {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(dir)
			cfg := mustLoad(t, c.args, c.vars)
			assert.Equal(t, c.want, cfg.UnixSocketPaths)
		})
	}

	bad := []struct {
		name string
		args []string
		vars map[string]string
		want string
	}{
		{"missing", []string{"--unix-socket", filepath.Join(dir, "gone")}, nil, `--unix-socket: "` + filepath.Join(dir, "gone") + `": stat`},
		{"missing, from the variable", nil, map[string]string{"HARNESS_UNIX_SOCKET": filepath.Join(dir, "gone")}, "HARNESS_UNIX_SOCKET: "},
		{"missing, from the file", []string{"--config", writeYAML(t, "unix-socket: ["+filepath.Join(dir, "gone")+"]\n")}, nil, `:1: key "unix-socket": `},
		{"a regular file", []string{"--unix-socket", regular}, nil, "is not a Unix socket (it is a regular file)"},
		{"a directory", []string{"--unix-socket", dir}, nil, "is not a Unix socket (it is a directory)"},
		{"empty", []string{"--unix-socket", " "}, nil, "--unix-socket: must not be empty"},
		{"not a list in YAML", []string{"--config", writeYAML(t, "unix-socket: 3\n")}, nil, `key "unix-socket" wants a list of strings`},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(t, c.args, c.vars)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
