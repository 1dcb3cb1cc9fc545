package toolexec_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hexec "github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolexec"
)

// secretWorld is a fixture home outside /tmp holding a key with a marker
// no result may show, and a workspace holding a `.env` (denied), a
// `.env.example` (readable) and a symlink to the key.
type secretWorld struct {
	home, ws, key, marker string
	pol                   *sandboxpolicy.Service
	sess                  *session.Session
	asked                 []sandbox.ApprovalRequest
}

func newSecretWorld(t *testing.T, mode sandbox.Mode) *secretWorld {
	t.Helper()
	requireLandlock(t)
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap is not installed")
	}
	home, err := os.MkdirTemp("/var/tmp", "harness-home-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	var rnd [12]byte
	_, err = rand.Read(rnd[:])
	require.NoError(t, err)
	w := &secretWorld{home: home, ws: filepath.Join(base, "ws"), key: filepath.Join(home, ".ssh", "id_ed25519"), marker: "KEYMARK-" + hex.EncodeToString(rnd[:])}
	require.NoError(t, os.MkdirAll(filepath.Dir(w.key), 0o700))
	require.NoError(t, os.Mkdir(w.ws, 0o755))
	require.NoError(t, os.WriteFile(w.key, []byte(w.marker+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(w.ws, ".env"), []byte("TOKEN="+w.marker+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(w.ws, ".env.example"), []byte("TOKEN=example\n"), 0o644))
	require.NoError(t, os.Symlink(w.key, filepath.Join(w.ws, "link")))
	w.pol, err = sandboxpolicy.New(sandboxpolicy.Config{Mode: mode, WorkspaceRoot: w.ws, TempRoots: []string{}, Homes: []string{home}})
	require.NoError(t, err)
	w.sess = session.New("s", w.ws)
	return w
}

func (w *secretWorld) tool(t *testing.T, answer sandbox.Outcome) *tool.Tool {
	t.Helper()
	r, err := execsandbox.New(execsandbox.Config{}, hexec.Config{}, w.pol)
	require.NoError(t, err)
	tl, err := toolexec.New(toolexec.Config{}, toolexec.Deps{
		Runner: r, Policy: w.pol,
		Approver: sandbox.ApproverFunc(func(_ context.Context, req sandbox.ApprovalRequest) (sandbox.Outcome, error) {
			w.asked = append(w.asked, req)
			return answer, nil
		}),
	})
	require.NoError(t, err)
	return tl.Exec()
}

// shown is everything of a result the model sees.
func shown(res tool.Result) string {
	v, _ := res.Value.(toolexec.Value)
	return res.Text + v.Stdout + v.Stderr
}

// A read a mask refuses is reported as a read denial, in every runtime's
// spelling, with its marker, its code, the path and the escalation hint;
// the key never shows.
func TestReadDenialIsInferred(t *testing.T) {
	type tc struct{ name, command, path, needs string }
	cases := []tc{
		{"cat the key", "cat KEY", "KEY", ""},
		{"cat through a workspace symlink", "cat link", "link", ""},
		{"cat the .env", "cat .env", ".env", ""},
		{"head of the key, its directory listed empty", "ls -A $(dirname KEY); head -c 10 KEY", "KEY", ""},
		{"python open", `python3 -c "open('.env').read()"`, ".env", "python3"},
		{"node readFileSync", `node -e "require('fs').readFileSync('KEY')"`, "KEY", "node"},
	}
	for _, mode := range []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite} {
		for _, c := range cases {
			t.Run(string(mode)+"/"+c.name, func(t *testing.T) {
				if c.needs != "" {
					if _, err := exec.LookPath(c.needs); err != nil {
						t.Skip(c.needs + " is not installed")
					}
				}
				w := newSecretWorld(t, mode)
				res := call(t, w.tool(t, sandbox.AllowedOnce), w.sess, map[string]any{"command": strings.ReplaceAll(c.command, "KEY", w.key)})
				require.True(t, res.IsError, res.Text)
				assert.EqualValues(t, fs.CodeReadDenied, res.Code, res.Text)
				assert.True(t, strings.HasPrefix(res.Text, "Error: "+sandbox.ReadDenialMarker(mode)+"\n(inferred: "), res.Text)
				assert.Contains(t, res.Text, "a credential path the deny-read set hides")
				assert.Contains(t, res.Text, "retry this exact command once with sandbox_permissions=danger-full-access + justification; the approval prompt asks the user for this one credential read")
				path := strings.ReplaceAll(c.path, "KEY", w.key)
				if !filepath.IsAbs(path) {
					path = filepath.Join(w.ws, path)
				}
				assert.Contains(t, res.Text, `"`+path+`"`)
				assert.NotContains(t, shown(res), w.marker)
				assert.Empty(t, w.asked)
			})
		}
	}
}

// What is not a mask's refusal stays a plain result: the exempt template,
// a missing file, a refusal printed about a path no mask covers.
func TestReadDenialNeedsAMaskedPath(t *testing.T) {
	w := newSecretWorld(t, sandbox.WorkspaceWrite)
	tl := w.tool(t, sandbox.AllowedOnce)
	for _, c := range []string{
		"cat .env.example; exit 1",
		"cat missing-file",
		"echo 'cat: /etc/hostname: Permission denied' >&2; exit 1",
		"echo 'cat: " + filepath.Join(w.home, "elsewhere") + ": No such file or directory' >&2; exit 1",
	} {
		res := call(t, tl, w.sess, map[string]any{"command": c})
		assert.NotEqual(t, fs.CodeReadDenied, res.Code, "%s: %s", c, res.Text)
	}
	res := call(t, tl, w.sess, map[string]any{"command": "cat .env.example"})
	require.False(t, res.IsError, res.Text)
	assert.Contains(t, res.Text, "TOKEN=example")
}

// A danger-full-access escalation of a command that names deny-read paths
// is a credential read: the prompt names them, an allowed-once answer lifts
// deny-read for that one run, an allowed-for-session answer does not (nor
// does the session's standing grant afterwards).
func TestCredentialReadEscalation(t *testing.T) {
	cases := []struct {
		name    string
		answer  sandbox.Outcome
		command func(w *secretWorld) string
		lifted  bool
	}{
		{"allowed once, the key by its path", sandbox.AllowedOnce, func(w *secretWorld) string { return "cat " + w.key }, true},
		{"allowed once, through the workspace symlink", sandbox.AllowedOnce, func(*secretWorld) string { return "cat link" }, true},
		{"allowed once, by ~", sandbox.AllowedOnce, func(*secretWorld) string { return "cat ~/.ssh/id_ed25519" }, true},
		{"allowed for the session", sandbox.AllowedForSession, func(w *secretWorld) string { return "cat " + w.key }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newSecretWorld(t, sandbox.WorkspaceWrite)
			t.Setenv("HOME", w.home)
			cmd := c.command(w)
			res := call(t, w.tool(t, c.answer), w.sess, map[string]any{
				"command": cmd, "sandbox_permissions": "danger-full-access", "justification": "The deployment needs the key.",
			})
			require.Len(t, w.asked, 1)
			assert.Equal(t, []string{w.key}, w.asked[0].Reads)
			prompt := sandboxpolicy.Prompt(w.asked[0])
			assert.Contains(t, prompt, "This is a credential read: the command names \""+w.key+"\"")
			if c.lifted {
				require.False(t, res.IsError, res.Text)
				assert.Contains(t, shown(res), w.marker)
			} else {
				require.True(t, res.IsError, res.Text)
				assert.EqualValues(t, fs.CodeReadDenied, res.Code, res.Text)
				assert.Contains(t, res.Text, sandbox.ReadDenialMarker(sandbox.DangerFullAccess))
				assert.NotContains(t, shown(res), w.marker)
			}
			// The next call, without asking, never reads it: a grant for
			// the session keeps deny-read, and a once answer was once.
			res = call(t, w.tool(t, c.answer), w.sess, map[string]any{"command": cmd})
			assert.NotContains(t, shown(res), w.marker)
			assert.EqualValues(t, fs.CodeReadDenied, res.Code, res.Text)
		})
	}
	for _, mode := range []sandbox.Mode{sandbox.DangerFullAccess, sandbox.WorkspaceWrite} {
		t.Run("asking for the mode held ("+string(mode)+") asks nobody and lifts nothing (issue 36)", func(t *testing.T) {
			w := newSecretWorld(t, mode)
			res := call(t, w.tool(t, sandbox.AllowedOnce), w.sess, map[string]any{
				"command": "cat " + w.key, "sandbox_permissions": string(mode), "justification": "The deployment needs the key.",
			})
			assert.Empty(t, w.asked)
			assert.NotContains(t, shown(res), w.marker)
			assert.EqualValues(t, fs.CodeReadDenied, res.Code, res.Text)
		})
	}
	t.Run("a command naming no deny-read path keeps deny-read", func(t *testing.T) {
		w := newSecretWorld(t, sandbox.WorkspaceWrite)
		res := call(t, w.tool(t, sandbox.AllowedOnce), w.sess, map[string]any{
			"command": "cat $(echo " + filepath.Dir(w.key) + ")/id_ed25519", "sandbox_permissions": "danger-full-access", "justification": "j.",
		})
		require.Len(t, w.asked, 1)
		assert.Empty(t, w.asked[0].Reads)
		assert.Contains(t, sandboxpolicy.Prompt(w.asked[0]), "stay hidden from it")
		assert.NotContains(t, shown(res), w.marker)
		assert.EqualValues(t, fs.CodeReadDenied, res.Code, res.Text)
	})
}
