//go:build linux

package main_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeWithoutAWritableHome starts the built binary where the state
// directory (the journal's and the default audit log's) cannot be made: as
// uid 65534 with HOME=/nonexistent, with a home one cannot write, with a
// home whose .local is a file, and with a home mounted read-only by
// bubblewrap (the last two stop root too). The server says so
// on stderr (one line for the journal, one for the audit log), answers
// initialize and serves a read, writing nothing under the home; an audit
// log the user named in the same place still stops the start (exit 2,
// naming --audit-log).
func TestServeWithoutAWritableHome(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildOnce()
	require.NoError(t, err)
	// uid 65534 runs it: its directory must be searchable by others (it is
	// when someone else built it, as scripts/test-unprivileged.sh does,
	// and then only its owner could change the mode).
	if st, err := os.Stat(filepath.Dir(bin)); err != nil || st.Mode().Perm()&0o005 != 0o005 {
		require.NoError(t, os.Chmod(filepath.Dir(bin), 0o755))
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for _, d := range []string{filepath.Dir(base), base} { // t.TempDir's are 0700
		require.NoError(t, os.Chmod(d, 0o755))
	}
	ws := filepath.Join(base, "ws")
	require.NoError(t, os.Mkdir(ws, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("hello\n"), 0o644))

	roHome := filepath.Join(base, "ro-home")
	require.NoError(t, os.Mkdir(roHome, 0o555))
	fileHome := filepath.Join(base, "file-home")
	require.NoError(t, os.Mkdir(fileHome, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(fileHome, ".local"), []byte("not a directory\n"), 0o644))

	rwHome := filepath.Join(base, "rw-home") // writable, but mounted read-only for the server
	require.NoError(t, os.Mkdir(rwHome, 0o755))
	bwrap, bwrapErr := exec.LookPath("bwrap")

	root := os.Geteuid() == 0
	tests := []struct {
		name   string
		home   string
		nobody bool   // run as uid 65534 (root only)
		roBind bool   // run under bubblewrap with the home bound read-only (stops root too)
		skip   string // why the case cannot be run by this user
	}{
		{name: "uid 65534, HOME=/nonexistent", home: "/nonexistent", nobody: true, skip: map[bool]string{false: "switching to uid 65534 needs root"}[root]},
		{name: "HOME=/nonexistent as this user", home: "/nonexistent", skip: map[bool]string{true: "root may make /nonexistent"}[root]},
		{name: "a home this user cannot write", home: roHome, skip: map[bool]string{true: "root writes a mode 0555 directory"}[root]},
		{name: "a home whose .local is a file", home: fileHome},
		{name: "a read-only mount as home", home: rwHome, roBind: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.skip != "" {
				t.Skip(tt.skip)
			}
			if tt.roBind && bwrapErr != nil {
				t.Skip("no bwrap to mount the home read-only:", bwrapErr)
			}
			before := treeOf(t, base)
			command := func(args ...string) *exec.Cmd {
				argv := append([]string{bin, "serve", "--workspace", ws}, args...)
				if tt.roBind {
					argv = append([]string{bwrap, "--dev-bind", "/", "/", "--ro-bind", tt.home, tt.home, "--"}, argv...)
				}
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Dir = ws
				cmd.Env = []string{"HOME=" + tt.home, "PATH=" + os.Getenv("PATH")} // no XDG_STATE_HOME
				if tt.nobody {
					cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
				}
				return cmd
			}

			cmd := command()
			stderrFile, err := os.CreateTemp("", "homeless-stderr-") // a file: no copying goroutine
			require.NoError(t, err)
			t.Cleanup(func() { _ = os.Remove(stderrFile.Name()) })
			defer func() { _ = stderrFile.Close() }()
			cmd.Stderr = stderrFile
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "homeless", Version: "v0"}, nil)
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			require.NoError(t, err, "initialize answers; stderr: %s", readFile(t, stderrFile.Name()))
			res := callTool(t, cs, "read", map[string]any{"file_path": "notes.txt"})
			require.False(t, res.IsError, text(res))
			assert.Contains(t, text(res), "1: hello")
			require.NoError(t, cs.Close())
			stderr := readFile(t, stderrFile.Name())
			assert.Equal(t, 1, strings.Count(stderr, "journal off: "), stderr)
			assert.Equal(t, 1, strings.Count(stderr, "audit log off: "), stderr)
			assert.Equal(t, before, treeOf(t, base), "nothing made beneath the homes or the workspace")

			named := filepath.Join(tt.home, "audit.jsonl")
			if tt.home == fileHome {
				// That home itself is writable (outside a temp root it may
				// hold an audit log): the named file lies beneath the file.
				named = filepath.Join(fileHome, ".local", "audit.jsonl")
			}
			cmd = command("--audit-log", named)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "a named audit log that cannot be opened stops the start: %v %s", err, out)
			assert.Equal(t, 2, exit.ExitCode(), string(out))
			assert.Contains(t, string(out), "--audit-log: ")
			assert.NoFileExists(t, named)
			assert.Equal(t, before, treeOf(t, base))
		})
	}
}

// treeOf returns every path beneath dir with its mode and size.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out[p] = info.Mode().String() + " " + strings.Repeat("#", int(min(info.Size(), 64)))
		return nil
	}))
	return out
}
