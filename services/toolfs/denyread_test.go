//go:build linux

package toolfs_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// Secret markers of the deny-read fixture: none may appear in a tool
// result unless the user approved that one read.
const (
	drKey    = "KEY-7f3c9e-ed25519-PRIVATE-MARKER"
	drAWS    = "aws_secret_access_key=AWS-4b1d-SECRET-MARKER"
	drEnv    = "API_TOKEN=ENV-9a2e-SECRET-MARKER"
	drPlain  = "plain workspace text\n"
	drHidden = "include_hidden"
)

// drWorld is the deny-read fixture (issue 24): a home outside /tmp (so no
// temp root holds it) with an SSH key and AWS credentials, and a
// workspace holding a .env, a symlink to the key, a symlink to the home
// and, where the kernel allows, a hard link to the key and a bind mount of
// ~/.ssh.
type drWorld struct {
	home, ws, key, aws, env string
	hardLink, bindMount     string // "" when not made, with why in skip*
	skipHard, skipBind      string
}

func drNewWorld(t *testing.T) *drWorld {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "denyread-")
	require.NoError(t, err)
	base, err = filepath.EvalSymlinks(base)
	require.NoError(t, err)
	w := &drWorld{home: filepath.Join(base, "home"), ws: filepath.Join(base, "ws")}
	w.key = filepath.Join(w.home, ".ssh", "id_ed25519")
	w.aws = filepath.Join(w.home, ".aws", "credentials")
	w.env = filepath.Join(w.ws, ".env")
	for _, d := range []string{filepath.Dir(w.key), filepath.Dir(w.aws), w.ws} {
		require.NoError(t, os.MkdirAll(d, 0o700))
	}
	require.NoError(t, os.WriteFile(w.key, []byte(drKey+"\n"), 0o600))
	require.NoError(t, os.WriteFile(w.aws, []byte("[default]\n"+drAWS+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(w.home, "notes.txt"), []byte("notes aws_secret mentioned\n"), 0o644))
	require.NoError(t, os.WriteFile(w.env, []byte(drEnv+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(w.ws, "readme.txt"), []byte(drPlain), 0o644))
	require.NoError(t, os.Symlink(w.key, filepath.Join(w.ws, "link")))
	require.NoError(t, os.Symlink(w.home, filepath.Join(w.ws, "homelink")))
	t.Cleanup(func() { _ = os.RemoveAll(base) })

	hard := filepath.Join(w.ws, "hl")
	if err := os.Link(w.key, hard); err != nil {
		w.skipHard = "the kernel refused a hard link to the key: " + err.Error()
	} else {
		w.hardLink = hard
	}
	mnt := filepath.Join(w.ws, "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	switch err := unix.Mount(filepath.Dir(w.key), mnt, "", unix.MS_BIND, ""); {
	case os.Geteuid() != 0 && err != nil:
		w.skipBind = "a bind mount needs root: " + err.Error()
	case err != nil:
		w.skipBind = "the kernel refused the bind mount: " + err.Error()
	default:
		w.bindMount = filepath.Join(mnt, "id_ed25519")
		t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	}
	return w
}

// tools composes the tools over fssandbox in mode, the fixture home as the
// only home, without readbeforewrite (so a write or an edit reaches the
// backend's own decision).
func (w *drWorld) tools(t *testing.T, mode sandbox.Mode, approver sandbox.Approver) *wrEnv {
	t.Helper()
	cfg := &sandboxpolicy.Config{Mode: mode, WorkspaceRoot: w.ws, TempRoots: []string{}, Homes: []string{w.home}}
	return wrNew(t, wrSetup{Cwd: w.ws, Sandbox: cfg, Approver: approver, Bare: true})
}

// drNoSecret asserts that no secret marker is in res, text or value.
func drNoSecret(t *testing.T, res tool.Result) {
	t.Helper()
	value, err := json.Marshal(res.Value)
	require.NoError(t, err)
	for _, secret := range []string{drKey, drAWS, "AWS-4b1d", drEnv} {
		assert.NotContains(t, res.Text, secret)
		assert.NotContains(t, string(value), secret)
	}
}

// drSnapshot is a file's bytes and mode.
type drSnapshot struct {
	data string
	mode os.FileMode
}

func drSnap(t *testing.T, p string) drSnapshot {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return drSnapshot{string(b), fi.Mode()}
}

var drModes = []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite, sandbox.DangerFullAccess}

// TestDenyReadFileTools runs the measured inputs through the file
// tools in every mode: each is refused (FS_READ_DENIED, the read marker) or
// answers without the denied paths, and no secret appears in any result.
func TestDenyReadFileTools(t *testing.T) {
	w := drNewWorld(t)
	type tc struct {
		name string
		tool func(*wrEnv) *tool.Tool
		args map[string]any
		// code is the refusal expected, "" for a result.
		code errcode.Code
		// also is a second code the mode may refuse with first (a write
		// under read-only).
		also errcode.Code
		skip string
		// contains are texts the result must hold.
		contains []string
		// absent are texts the result must not hold.
		absent []string
		// unchanged are files whose bytes and mode must not change.
		unchanged []string
	}
	read := func(e *wrEnv) *tool.Tool { return e.tools.Read() }
	grep := func(e *wrEnv) *tool.Tool { return e.tools.Grep() }
	glob := func(e *wrEnv) *tool.Tool { return e.tools.Glob() }
	list := func(e *wrEnv) *tool.Tool { return e.tools.List() }
	write := func(e *wrEnv) *tool.Tool { return e.tools.Write() }
	edit := func(e *wrEnv) *tool.Tool { return e.tools.Edit() }
	cases := []tc{
		{
			name: "read ~/.ssh/id_ed25519", tool: read, args: map[string]any{"file_path": w.key}, code: fs.CodeReadDenied,
			contains: []string{"~/.ssh (default)", "sandbox_permissions=danger-full-access"},
		},
		{
			name: "read through a symlink in the workspace", tool: read, args: map[string]any{"file_path": "link"}, code: fs.CodeReadDenied,
			contains: []string{"~/.ssh (default)"},
		},
		{name: "read through ..", tool: read, args: map[string]any{"file_path": "../home/.ssh/id_ed25519"}, code: fs.CodeReadDenied},
		{
			name: "read through a hard link made in the workspace", tool: read, args: map[string]any{"file_path": "hl"}, code: fs.CodeReadDenied,
			skip: w.skipHard, contains: []string{"hard link"},
		},
		{
			name: "read through a bind mount of ~/.ssh", tool: read, args: map[string]any{"file_path": "mnt/id_ed25519"}, code: fs.CodeReadDenied,
			skip: w.skipBind,
		},
		{
			name: "read the workspace .env", tool: read, args: map[string]any{"file_path": ".env"}, code: fs.CodeReadDenied,
			contains: []string{".env (default)"},
		},
		{
			name: "read a plain workspace file still works", tool: read, args: map[string]any{"file_path": "readme.txt"},
			contains: []string{"plain workspace text"},
		},
		{
			name: "grep -r aws_secret over the home skips .aws and says so", tool: grep,
			args:     map[string]any{"pattern": "aws_secret", "path": w.home, drHidden: true, "output_mode": "content"},
			contains: []string{"notes aws_secret mentioned", "in the deny-read set skipped"},
		},
		{
			name: "grep -r aws_secret over a workspace holding a symlink to the home", tool: grep,
			args:   map[string]any{"pattern": "aws_secret", "path": w.ws, drHidden: true, "output_mode": "content"},
			absent: []string{"credentials"},
		},
		{
			name: "grep -r aws_secret through the symlink to the home", tool: grep,
			args:     map[string]any{"pattern": "aws_secret", "path": "homelink", drHidden: true, "output_mode": "content"},
			contains: []string{"in the deny-read set skipped"}, absent: []string{"credentials"},
		},
		{
			name: "grep naming the denied file directly is refused", tool: grep,
			args: map[string]any{"pattern": "aws_secret", "path": w.aws, "output_mode": "content"}, code: fs.CodeReadDenied,
		},
		{
			name: "grep over the denied directory is refused", tool: grep,
			args: map[string]any{"pattern": "aws", "path": filepath.Dir(w.aws)}, code: fs.CodeReadDenied,
		},
		{
			name: "grep for the key over the workspace (symlinks, a hard link, a bind mount) finds nothing", tool: grep,
			args:     map[string]any{"pattern": "PRIVATE-MARKER", "path": w.ws, drHidden: true, "output_mode": "content"},
			contains: []string{"No matches", "in the deny-read set skipped"}, absent: []string{"hl", "mnt"},
		},
		{
			name: "grep over the workspace skips .env", tool: grep,
			args:     map[string]any{"pattern": "API_TOKEN", "path": w.ws, drHidden: true, "output_mode": "content"},
			contains: []string{"in the deny-read set skipped"},
		},
		{
			name: "glob **/* over the home lists no denied path", tool: glob,
			args:     map[string]any{"pattern": "**/*", "path": w.home, drHidden: true},
			contains: []string{"notes.txt", "in the deny-read set skipped"}, absent: []string{"id_ed25519", "credentials"},
		},
		{name: "list ~/.ssh is refused", tool: list, args: map[string]any{"path": filepath.Dir(w.key)}, code: fs.CodeReadDenied},
		{
			name: "list ~/.ssh through the bind mount is refused", tool: list, args: map[string]any{"path": "mnt"}, code: fs.CodeReadDenied,
			skip: w.skipBind,
		},
		{
			name: "list the home shows .ssh but never inside it", tool: list, args: map[string]any{"path": w.home, "depth": 3},
			contains: []string{".ssh", "in the deny-read set"}, absent: []string{"id_ed25519", "credentials"},
		},
		{
			name: "write over the key is refused", tool: write, args: map[string]any{"file_path": w.key, "content": "x\n"},
			code: fs.CodeReadDenied, unchanged: []string{w.key},
		},
		{
			name: "edit of the AWS credentials is refused", tool: edit,
			args: map[string]any{"file_path": w.aws, "old_string": "aws_secret_access_key", "new_string": "x"},
			code: fs.CodeReadDenied, unchanged: []string{w.aws},
		},
		{
			name: "write over the hard link is refused", tool: write, args: map[string]any{"file_path": "hl", "content": "x\n"},
			code: fs.CodeReadDenied, also: fs.CodeSandboxDenied, skip: w.skipHard, unchanged: []string{w.key},
		},
		{
			name: "edit through the hard link is refused", tool: edit,
			args: map[string]any{"file_path": "hl", "old_string": "KEY", "new_string": "x"},
			code: fs.CodeReadDenied, also: fs.CodeSandboxDenied, skip: w.skipHard, unchanged: []string{w.key},
		},
		{
			name: "edit of the workspace .env is refused", tool: edit,
			args: map[string]any{"file_path": ".env", "old_string": "API_TOKEN", "new_string": "x"},
			code: fs.CodeReadDenied, unchanged: []string{w.env},
		},
	}
	for _, mode := range drModes {
		t.Run(string(mode), func(t *testing.T) {
			e := w.tools(t, mode, nil)
			sess := session.New("s1", w.ws)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					if c.skip != "" {
						t.Skip(c.skip)
					}
					before := map[string]drSnapshot{}
					for _, p := range c.unchanged {
						before[p] = drSnap(t, p)
					}
					res := wrCall(t, c.tool(e), sess, c.args)
					drNoSecret(t, res)
					switch {
					case c.code == "":
						assert.False(t, res.IsError, res.Text)
					case res.Code == c.also && c.also != "":
						assert.True(t, res.IsError)
					default:
						assert.True(t, res.IsError, res.Text)
						assert.Equal(t, c.code, res.Code, res.Text)
						assert.True(t, strings.HasPrefix(res.Text, "Error: "+sandbox.ReadDenialMarker(mode)), res.Text)
					}
					for _, s := range c.contains {
						assert.Contains(t, res.Text, s)
					}
					for _, s := range c.absent {
						assert.NotContains(t, res.Text, s)
					}
					for p, snap := range before {
						assert.Equal(t, snap, drSnap(t, p), "%s unchanged on disk", p)
					}
				})
			}
		})
	}
}

// TestDenyReadSymlinkRace: while goroutines swap a workspace symlink
// between a plain file and the key, reads and searches through it loop;
// the key's bytes never appear in any result.
func TestDenyReadSymlinkRace(t *testing.T) {
	w := drNewWorld(t)
	plain := filepath.Join(w.ws, "readme.txt")
	swap := filepath.Join(w.ws, "swap")
	require.NoError(t, os.Symlink(plain, swap))
	for _, mode := range drModes {
		t.Run(string(mode), func(t *testing.T) {
			e := w.tools(t, mode, nil)
			sess := session.New("s1", w.ws)
			var stop atomic.Bool
			var swappers sync.WaitGroup
			for i := range 2 {
				swappers.Go(func() {
					tmp := filepath.Join(w.ws, ".swap-tmp-"+string(rune('a'+i)))
					for n := 0; !stop.Load(); n++ {
						dest := plain
						if n%2 == 0 {
							dest = w.key
						}
						_ = os.Remove(tmp)
						if os.Symlink(dest, tmp) == nil {
							_ = os.Rename(tmp, swap)
						}
					}
				})
			}
			plainReads, denied := 0, 0
			for range 300 {
				res := wrCall(t, e.tools.Read(), sess, map[string]any{"file_path": "swap"})
				drNoSecret(t, res)
				switch {
				case !res.IsError:
					plainReads++
					assert.Contains(t, res.Text, "plain workspace text")
				case res.Code == fs.CodeReadDenied:
					denied++
				}
				drNoSecret(t, wrCall(t, e.tools.Grep(), sess, map[string]any{"pattern": "MARKER", "path": "swap", "output_mode": "content"}))
			}
			stop.Store(true)
			swappers.Wait()
			t.Logf("%d plain reads, %d refused", plainReads, denied)
			assert.Positive(t, plainReads+denied)
		})
	}
}

// TestDenyReadEscalation: a denied read escalated to danger-full-access
// asks the user once, naming the canonical file and the rule and saying it
// is a credential read; allowed, exactly that read returns the key; the
// next call is refused again; an "allow for the session" answer counts as
// once; a session grant of danger-full-access does not lift the set; a
// target changed after the approval returns nothing.
func TestDenyReadEscalation(t *testing.T) {
	w := drNewWorld(t)
	escalate := func(path string) map[string]any {
		return map[string]any{"file_path": path, "sandbox_permissions": "danger-full-access", "justification": "Check the key's comment."}
	}
	for _, mode := range drModes {
		t.Run(string(mode), func(t *testing.T) {
			approvals := &wrApprovals{outcome: sandbox.AllowedOnce}
			e := w.tools(t, mode, approvals.approver())
			sess := session.New("s1", w.ws)

			res := wrCall(t, e.tools.Read(), sess, escalate("link"))
			require.False(t, res.IsError, res.Text)
			assert.Contains(t, res.Text, drKey, "the approved read returns the key")
			asked := approvals.asked()
			require.Len(t, asked, 1)
			assert.Equal(t, w.key, asked[0].Target, "the prompt names the canonical file")
			assert.Equal(t, filepath.Join(w.ws, "link"), asked[0].Given)
			assert.Equal(t, "~/.ssh (default)", asked[0].ReadRule)
			prompt := sandboxpolicy.Prompt(asked[0])
			assert.Contains(t, prompt, "credential read")
			assert.Contains(t, prompt, "~/.ssh (default)")
			assert.Contains(t, prompt, "counts as once")

			again := wrCall(t, e.tools.Read(), sess, map[string]any{"file_path": "link"})
			assert.Equal(t, fs.CodeReadDenied, again.Code, "a second call is refused again")
			drNoSecret(t, again)

			approvals.outcome = sandbox.Rejected
			rejected := wrCall(t, e.tools.Read(), sess, escalate(w.key))
			assert.Equal(t, sandboxpolicy.CodeEscalationRefused, rejected.Code)
			drNoSecret(t, rejected)

			narrow := wrCall(t, e.tools.Read(), sess, map[string]any{"file_path": w.key, "sandbox_permissions": "workspace-write", "justification": "x"})
			assert.True(t, narrow.IsError)
			drNoSecret(t, narrow)

			approvals.outcome = sandbox.AllowedForSession
			once := wrCall(t, e.tools.Read(), sess, escalate(w.key))
			assert.Contains(t, once.Text, drKey)
			after := wrCall(t, e.tools.Read(), sess, map[string]any{"file_path": w.key})
			assert.Equal(t, fs.CodeReadDenied, after.Code, "allow for the session counted as once")
			drNoSecret(t, after)
			_, granted := sandboxpolicy.SessionGrant(sess, sandbox.FileTools)
			assert.False(t, granted, "a credential read records no session grant")
		})
	}

	t.Run("a session grant of danger-full-access does not lift the set", func(t *testing.T) {
		approvals := &wrApprovals{outcome: sandbox.AllowedForSession}
		e := w.tools(t, sandbox.WorkspaceWrite, approvals.approver())
		sess := session.New("s1", w.ws)
		out := filepath.Join(w.home, "granted.txt")
		wrOK(t, wrCall(t, e.tools.Write(), sess, map[string]any{
			"file_path": out, "content": "x\n", "sandbox_permissions": "danger-full-access", "justification": "Write outside.",
		}))
		mode, granted := sandboxpolicy.SessionGrant(sess, sandbox.FileTools)
		require.True(t, granted)
		require.Equal(t, sandbox.DangerFullAccess, mode)
		res := wrCall(t, e.tools.Read(), sess, map[string]any{"file_path": w.key})
		assert.Equal(t, fs.CodeReadDenied, res.Code)
		assert.Contains(t, res.Text, sandbox.ReadDenialMarker(sandbox.DangerFullAccess))
		assert.Contains(t, res.Text, "does not lift the deny-read set")
		drNoSecret(t, res)
	})

	t.Run("a target changed after the approval returns nothing", func(t *testing.T) {
		link := filepath.Join(w.ws, "moving")
		require.NoError(t, os.Symlink(w.key, link))
		approver := sandbox.ApproverFunc(func(_ context.Context, _ sandbox.ApprovalRequest) (sandbox.Outcome, error) {
			tmp := link + ".tmp"
			if err := os.Symlink(w.aws, tmp); err != nil {
				return "", err
			}
			return sandbox.AllowedOnce, os.Rename(tmp, link)
		})
		e := w.tools(t, sandbox.WorkspaceWrite, approver)
		res := wrCall(t, e.tools.Read(), session.New("s1", w.ws), escalate("moving"))
		assert.Equal(t, sandboxpolicy.CodeTargetChanged, res.Code, res.Text)
		drNoSecret(t, res)
	})
}
