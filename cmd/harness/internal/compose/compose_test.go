package compose_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/cmd/harness/internal/compose"
	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// dirs is one test's layout: a workspace, a temp root and an outside
// directory, all fresh and canonical, none inside another.
type dirs struct {
	ws, temp, outside string
}

func newDirs(t *testing.T) dirs {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, base, "ws/", "temp/", "outside/")
	return dirs{ws: filepath.Join(base, "ws"), temp: filepath.Join(base, "temp"), outside: filepath.Join(base, "outside")}
}

// toolsByName starts the graph of cfg with fxtest and returns its tools.
func toolsByName(t *testing.T, cfg config.Config, extra ...fx.Option) (map[string]*tool.Tool, *fxtest.App) {
	t.Helper()
	var group tool.Group
	opts, err := compose.Options(cfg, io.Discard, append(extra, fx.Populate(&group))...)
	require.NoError(t, err)
	app := fxtest.New(t, opts)
	app.RequireStart()
	out := map[string]*tool.Tool{}
	for _, tl := range group.Tools {
		require.NotContains(t, out, tl.Name, "a tool is contributed twice")
		out[tl.Name] = tl
	}
	return out, app
}

// call runs tl in sess (one session per test: the read-before-write policy
// keys its observations by session).
func call(t *testing.T, sess *session.Session, tl *tool.Tool, args any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	return tl.Handler(session.NewContext(context.Background(), sess), tool.Call{ID: "1", Arguments: raw})
}

// TestLocalWithAnotherModeIsRefused (issue 12): --fs local never confines,
// so a configuration naming another mode does not compose.
func TestLocalWithAnotherModeIsRefused(t *testing.T) {
	for _, mode := range []string{"read-only", "workspace-write"} {
		_, err := compose.Options(config.Config{FS: "local", Mode: mode, LogLevel: "info", LogFormat: "console"}, io.Discard)
		require.ErrorContains(t, err, "conflicts with --fs local", mode)
	}
}

func TestGraph(t *testing.T) {
	type outcome struct{ inside, outside bool }
	tests := []struct {
		fs, mode string
		want     outcome
	}{
		{fs: "sandbox", mode: "read-only", want: outcome{inside: false, outside: false}},
		{fs: "sandbox", mode: "workspace-write", want: outcome{inside: true, outside: false}},
		{fs: "sandbox", mode: "danger-full-access", want: outcome{inside: true, outside: true}},
		{fs: "local", mode: "danger-full-access", want: outcome{inside: true, outside: true}},
	}
	for _, tc := range tests {
		t.Run(tc.fs+"/"+tc.mode, func(t *testing.T) {
			d := newDirs(t)
			fixture.Build(t, d.ws, "hello.txt: hi\n")
			cfg := config.Config{
				FS: tc.fs, Mode: tc.mode, Workspace: d.ws, TempRoots: []string{d.temp},
				LogLevel: "debug", LogFormat: "json",
			}
			tools, app := toolsByName(t, cfg)
			defer app.RequireStop()
			sess := session.New("s-1", d.ws)

			names := make([]string, 0, len(tools))
			for _, tl := range tool.Sorted(mapValues(tools)) {
				names = append(names, tl.Name)
			}
			require.Equal(t, []string{"delete", "edit", "exec", "exec_input", "exec_kill", "exec_output", "glob", "grep", "list", "mkdir", "move", "read", "write"}, names)

			confines := tc.fs == "sandbox"
			for _, name := range []string{"write", "edit"} {
				props := tools[name].InputSchema.Properties
				if confines {
					assert.Contains(t, props, "sandbox_permissions", name)
					assert.Contains(t, props, "justification", name)
				} else {
					assert.NotContains(t, props, "sandbox_permissions", "%s: the local backend never confines, so it offers no escalation", name)
					assert.NotContains(t, props, "justification", name)
				}
			}

			r := call(t, sess, tools["read"], map[string]any{"file_path": "hello.txt"})
			require.False(t, r.IsError, r.Text)
			assert.Contains(t, r.Text, "1: hi")

			r = call(t, sess, tools["list"], map[string]any{"path": "."})
			require.False(t, r.IsError, r.Text)
			assert.Contains(t, r.Text, "hello.txt")

			inside := filepath.Join(d.ws, "inside.txt")
			r = call(t, sess, tools["write"], map[string]any{"file_path": "inside.txt", "content": "in\n"})
			checkWrite(t, r, inside, "in\n", tc.want.inside, tc.mode)

			outside := filepath.Join(d.outside, "outside.txt")
			r = call(t, sess, tools["write"], map[string]any{"file_path": outside, "content": "out\n"})
			checkWrite(t, r, outside, "out\n", tc.want.outside, tc.mode)

			if tc.want.inside {
				// A write after a read-before-write-satisfying write: the
				// edit tool on the file just created.
				r = call(t, sess, tools["edit"], map[string]any{"file_path": "inside.txt", "old_string": "in", "new_string": "IN"})
				require.False(t, r.IsError, r.Text)
				assert.Equal(t, "IN\n", readFile(t, inside))
			} else {
				r = call(t, sess, tools["edit"], map[string]any{"file_path": "hello.txt", "old_string": "hi", "new_string": "HI"})
				require.True(t, r.IsError, r.Text)
				assert.EqualValues(t, fs.CodeSandboxDenied, r.Code)
				assert.Equal(t, "hi\n", readFile(t, filepath.Join(d.ws, "hello.txt")))
			}
			assert.Empty(t, fixture.Residue(t, filepath.Dir(d.ws)))
		})
	}
}

func checkWrite(t *testing.T, r tool.Result, path, content string, allowed bool, mode string) {
	t.Helper()
	if allowed {
		require.False(t, r.IsError, r.Text)
		assert.Equal(t, content, readFile(t, path))
		return
	}
	require.True(t, r.IsError, "the write must be denied: %s", r.Text)
	assert.EqualValues(t, fs.CodeSandboxDenied, r.Code)
	assert.Equal(t, "Error: "+sandbox.DenialMarker(sandbox.Mode(mode))+"\n"+
		sandbox.EscalationHint(sandbox.SubjectOperation), r.Text)
	assert.NoFileExists(t, path)
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

func mapValues(m map[string]*tool.Tool) []*tool.Tool {
	out := make([]*tool.Tool, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func TestGraphTempRoot(t *testing.T) {
	d := newDirs(t)
	tools, app := toolsByName(t, config.Config{
		FS: "sandbox", Mode: "workspace-write", Workspace: d.ws, TempRoots: []string{d.temp},
		LogLevel: "info", LogFormat: "console",
	})
	defer app.RequireStop()
	sess := session.New("s-1", d.ws)
	p := filepath.Join(d.temp, "scratch.txt")
	r := call(t, sess, tools["write"], map[string]any{"file_path": p, "content": "tmp"})
	require.False(t, r.IsError, "a configured temp root is writable under workspace-write: %s", r.Text)
	assert.Equal(t, "tmp", readFile(t, p))
}

func TestGraphEscalation(t *testing.T) {
	d := newDirs(t)
	var asked []sandbox.ApprovalRequest
	approver := sandbox.ApproverFunc(func(_ context.Context, req sandbox.ApprovalRequest) (sandbox.Outcome, error) {
		asked = append(asked, req)
		return sandbox.AllowedOnce, nil
	})
	tools, app := toolsByName(t, config.Config{
		FS: "sandbox", Mode: "read-only", Workspace: d.ws, TempRoots: []string{d.temp},
		LogLevel: "info", LogFormat: "console",
	}, fx.Provide(func() sandbox.Approver { return approver }))
	defer app.RequireStop()
	sess := session.New("s-1", d.ws)

	r := call(t, sess, tools["write"], map[string]any{
		"file_path": "granted.txt", "content": "ok",
		"sandbox_permissions": "workspace-write", "justification": "The user asked.",
	})
	require.False(t, r.IsError, r.Text)
	assert.Equal(t, "ok", readFile(t, filepath.Join(d.ws, "granted.txt")))
	require.Len(t, asked, 1, "the supplied approver is the one the tools ask")
	assert.Equal(t, "write", asked[0].Tool)
	assert.Equal(t, sandbox.WorkspaceWrite, asked[0].Mode)
}

func TestGraphLocalRefusesEscalationArgs(t *testing.T) {
	d := newDirs(t)
	tools, app := toolsByName(t, config.Config{
		FS: "local", Mode: "danger-full-access", Workspace: d.ws, LogLevel: "info", LogFormat: "console",
	})
	defer app.RequireStop()
	sess := session.New("s-1", d.ws)
	r := call(t, sess, tools["write"], map[string]any{
		"file_path": "x.txt", "content": "x", "sandbox_permissions": "workspace-write", "justification": "j",
	})
	require.True(t, r.IsError)
	assert.Contains(t, r.Text, "sandbox_permissions is not available")
	assert.NoFileExists(t, filepath.Join(d.ws, "x.txt"))
}

func TestGraphConfigReachesTools(t *testing.T) {
	d := newDirs(t)
	fixture.Build(t, d.ws, "lines.txt: 1\n2\n3\n4\n5\n", "a", "b", "c")
	tools, app := toolsByName(t, config.Config{
		FS: "sandbox", Mode: "read-only", Workspace: d.ws, ReadLimit: 2, ListLimit: 1,
		LogLevel: "info", LogFormat: "console",
	})
	defer app.RequireStop()
	sess := session.New("s-1", d.ws)
	r := call(t, sess, tools["read"], map[string]any{"file_path": "lines.txt"})
	require.False(t, r.IsError, r.Text)
	assert.Contains(t, r.Text, "2: 2")
	assert.NotContains(t, r.Text, "3: 3", "--read-limit 2 reaches the read tool")

	r = call(t, sess, tools["list"], map[string]any{"path": "."})
	require.False(t, r.IsError, r.Text)
	listed := 0
	for _, name := range []string{"lines.txt", "a", "b", "c"} {
		if strings.Contains(r.Text, name) {
			listed++
		}
	}
	assert.Less(t, listed, 4, "--list-limit 1 reaches the list tool: %s", r.Text)
}

func TestOptionsErrors(t *testing.T) {
	valid := func() config.Config {
		c := config.Default()
		c.Workspace = t.TempDir()
		return c
	}

	t.Run("an invalid Config fails validation naming the flag", func(t *testing.T) {
		for flagName, mutate := range map[string]func(*config.Config){
			"--fs":         func(c *config.Config) { c.FS = "zfs" },
			"--mode":       func(c *config.Config) { c.Mode = "yolo" },
			"--log-level":  func(c *config.Config) { c.LogLevel = "loud" },
			"--log-format": func(c *config.Config) { c.LogFormat = "xml" },
			"--read-limit": func(c *config.Config) { c.ReadLimit = -1 },
			"--list-limit": func(c *config.Config) { c.ListLimit = -1 },
		} {
			cfg := valid()
			mutate(&cfg)
			opts, err := compose.Options(cfg, io.Discard)
			require.Error(t, err, flagName)
			assert.Nil(t, opts)
			assert.Contains(t, err.Error(), flagName)
		}
	})

	t.Run("the zero Config is invalid", func(t *testing.T) {
		_, err := compose.Options(config.Config{}, io.Discard)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "--fs")
	})

	// Issue 14 item 18: --temp-root must exist.
	t.Run("a missing temp root fails naming --temp-root", func(t *testing.T) {
		cfg := valid()
		missing := filepath.Join(t.TempDir(), "nonexistent")
		cfg.TempRoots = []string{missing}
		opts, err := compose.Options(cfg, io.Discard)
		require.Error(t, err)
		assert.Nil(t, opts)
		assert.Equal(t, fmt.Sprintf("--temp-root %q: not an existing directory", missing), err.Error())
		assert.NoDirExists(t, missing)
	})

	t.Run("a temp root that is a file fails naming --temp-root", func(t *testing.T) {
		cfg := valid()
		file := filepath.Join(t.TempDir(), "f")
		require.NoError(t, os.WriteFile(file, nil, 0o600))
		cfg.TempRoots = []string{file}
		_, err := compose.Options(cfg, io.Discard)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "--temp-root")
	})

	t.Run("a temp root of / fails the app at construction", func(t *testing.T) {
		cfg := valid()
		cfg.Mode = "workspace-write"
		cfg.TempRoots = []string{"/"}
		opts, err := compose.Options(cfg, io.Discard)
		require.NoError(t, err)
		app := fx.New(opts)
		require.Error(t, app.Err())
		assert.Contains(t, app.Err().Error(), "TempRoots")
	})

	t.Run("Options does not modify the caller's Config", func(t *testing.T) {
		dir := t.TempDir()
		t.Chdir(dir)
		require.NoError(t, os.Mkdir(filepath.Join(dir, "rel-temp"), 0o700))
		cfg := valid()
		cfg.TempRoots = []string{"rel-temp"}
		_, err := compose.Options(cfg, io.Discard)
		require.NoError(t, err)
		assert.Equal(t, []string{"rel-temp"}, cfg.TempRoots,
			"Options takes the Config by value, yet validation rewrote the caller's TempRoots slice in place")
	})
}

func TestLogger(t *testing.T) {
	t.Run("json at debug writes JSON lines to the given writer", func(t *testing.T) {
		var buf bytes.Buffer
		log, err := compose.NewLogger(config.Config{LogLevel: "debug", LogFormat: "json"}, &buf)
		require.NoError(t, err)
		log.Debug("hello")
		var line map[string]any
		require.NoError(t, json.Unmarshal(buf.Bytes(), &line), buf.String())
		assert.Equal(t, "hello", line["msg"])
		assert.Equal(t, "debug", line["level"])
	})

	t.Run("console at warn drops info", func(t *testing.T) {
		var buf bytes.Buffer
		log, err := compose.NewLogger(config.Config{LogLevel: "warn", LogFormat: "console"}, &buf)
		require.NoError(t, err)
		log.Info("quiet")
		log.Warn("loud")
		assert.NotContains(t, buf.String(), "quiet")
		assert.Contains(t, buf.String(), "loud")
		assert.False(t, json.Valid(bytes.TrimSpace(buf.Bytes())), "console is not JSON")
	})

	t.Run("a bad level names --log-level", func(t *testing.T) {
		_, err := compose.NewLogger(config.Config{LogLevel: "loud", LogFormat: "json"}, io.Discard)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "--log-level")
	})

	t.Run("the graph logs to the writer it is given, never elsewhere", func(t *testing.T) {
		var buf bytes.Buffer
		d := newDirs(t)
		var group tool.Group
		opts, err := compose.Options(config.Config{
			FS: "sandbox", Mode: "read-only", Workspace: d.ws, TempRoots: []string{d.temp},
			LogLevel: "trace", LogFormat: "json",
		}, &buf, fx.Populate(&group))
		require.NoError(t, err)
		app := fxtest.New(t, opts)
		app.RequireStart().RequireStop()
		assert.NotEmpty(t, buf.String(), "fx events are logged at trace")
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var rec map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
			assert.Equal(t, "trace", rec["level"], line)
		}
	})

	// Issue 14 item 18: the dependency wiring logs only at trace; debug
	// carries none of it.
	t.Run("debug has no dependency wiring", func(t *testing.T) {
		var buf bytes.Buffer
		d := newDirs(t)
		var group tool.Group
		opts, err := compose.Options(config.Config{
			FS: "sandbox", Mode: "read-only", Workspace: d.ws, TempRoots: []string{d.temp},
			LogLevel: "debug", LogFormat: "json",
		}, &buf, fx.Populate(&group))
		require.NoError(t, err)
		app := fxtest.New(t, opts)
		app.RequireStart().RequireStop()
		assert.NotContains(t, buf.String(), `"logger":"fx"`)
		assert.NotContains(t, buf.String(), "PROVIDE")
	})
}

// --durability and --workspace-owner reach the backend's configuration; as
// root in a workspace owned by 1000:1000, a file the write tool creates is
// 1000's (spec difference 9), and root's with --workspace-owner=false.
func TestGraphDurabilityAndWorkspaceOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the workspace owner applies to a server running as root")
	}
	d := newDirs(t)
	require.NoError(t, os.Chown(d.ws, 1000, 1000))
	// The file tools act as the owner (issue 35): it must be able to reach
	// its workspace, which the test's 0700 temporary directories forbid.
	for _, p := range []string{filepath.Dir(filepath.Dir(d.ws)), filepath.Dir(d.ws)} {
		require.NoError(t, os.Chmod(p, 0o755))
	}
	for _, c := range []struct {
		name       string
		fs, mode   string
		durability string
		owner      bool
		want       *fslocal.Owner
		uid        uint32
	}{
		{"local, atomic, new files take the workspace owner", "local", "danger-full-access", "atomic", true, &fslocal.Owner{UID: 1000, GID: 1000}, 1000},
		{"local, full, the owner switched off", "local", "danger-full-access", "full", false, nil, 0},
		{"sandbox, atomic, new files take the workspace owner", "sandbox", "workspace-write", "atomic", true, &fslocal.Owner{UID: 1000, GID: 1000}, 1000},
		{"sandbox, full, the owner switched off", "sandbox", "workspace-write", "full", false, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var backend fslocal.Config
			tools, app := toolsByName(t, config.Config{
				FS: c.fs, Mode: c.mode, Workspace: d.ws, TempRoots: []string{d.temp}, Durability: c.durability, WorkspaceOwner: c.owner,
				LogLevel: "info", LogFormat: "console",
			}, fx.Populate(&backend))
			defer app.RequireStop()
			assert.Equal(t, fslocal.Durability(c.durability), backend.Durability)
			assert.Equal(t, c.want, backend.NewOwner)
			name := c.fs + "-" + c.durability + ".txt"
			r := call(t, session.New("s-"+c.durability, d.ws), tools["write"], map[string]any{"file_path": name, "content": "x\n"})
			require.False(t, r.IsError, r.Text)
			info, err := os.Stat(filepath.Join(d.ws, name))
			require.NoError(t, err)
			assert.Equal(t, c.uid, info.Sys().(*syscall.Stat_t).Uid)
		})
	}
}
