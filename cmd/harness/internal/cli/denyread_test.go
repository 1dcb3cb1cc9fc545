package cli_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/cli"
	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/sandbox"
)

// secretHome is a fixture home directory outside every temp root (under
// /var/tmp), holding an ssh key and AWS credentials whose secret bytes are
// unique to the test, and a public notes file that names aws_secret too.
type secretHome struct {
	dir string
	// key and awsSecret are the secret bytes: neither may appear in any
	// tool result.
	key, awsSecret string
}

func newSecretHome(t *testing.T) secretHome {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "harness-denyread-home-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	dir, err = filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	nonce := make([]byte, 12)
	_, _ = rand.Read(nonce)
	h := secretHome{dir: dir, key: "KEYBYTES" + hex.EncodeToString(nonce), awsSecret: "AWSSECRET" + hex.EncodeToString(nonce)}
	fixture.Build(t, dir,
		".ssh/id_ed25519: -----BEGIN OPENSSH PRIVATE KEY-----\n"+h.key+"\n-----END OPENSSH PRIVATE KEY-----\n",
		".ssh/id_ed25519.pub: ssh-ed25519 AAAAC3Nza public\n",
		".aws/credentials: [default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = "+h.awsSecret+"\n",
		"notes.txt: aws_secret_access_key goes in ~/.aws/credentials\n",
	)
	require.NoError(t, os.Chmod(filepath.Join(dir, ".ssh", "id_ed25519"), 0o600))
	require.NoError(t, os.Chmod(filepath.Join(dir, ".aws", "credentials"), 0o600))
	return h
}

// serveSession runs `harness serve` with args in-process, as the binary
// does, and returns a client session over its stdin and stdout; the
// server ends when the test does.
func serveSession(t *testing.T, args ...string) *mcp.ClientSession {
	t.Helper()
	return serveSessionWith(t, nil, args...)
}

// serveSessionWith is serveSession for a client with opts (an elicitation
// handler answering approvals).
func serveSessionWith(t *testing.T, opts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		code := cli.Run(ctx, append([]string{"serve"}, args...), cli.Env{
			Stdin: serverIn, Stdout: serverOut, Stderr: &stderr, Getenv: getenv(nil),
		})
		_ = serverOut.Close()
		done <- code
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "denyread-test", Version: "v0"}, opts).
		Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	require.NoError(t, err, "stderr:\n%s", stderr.String())
	t.Cleanup(func() {
		_ = cs.Close()
		select {
		case code := <-done:
			assert.EqualValues(t, cli.ExitOK, code, "stderr:\n%s", stderr.String())
		case <-ctx.Done():
			t.Errorf("serve did not return after the client closed; stderr:\n%s", stderr.String())
		}
		cancel()
	})
	return cs
}

// callTool calls name with args and returns the result and its whole JSON
// (content, structured value and _meta), where no secret may appear.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	raw, err := json.Marshal(res)
	require.NoError(t, err)
	return res, string(raw)
}

// TestDenyReadMeasuredInputs (issue 24): the measured inputs, through the
// real MCP server with a fixture HOME, in every mode: `read
// ~/.ssh/id_ed25519`, `grep aws_secret` over ~/.aws, `exec cat
// ~/.ssh/id_ed25519` (and the key through a symlink in the workspace) are
// refused with FS_READ_DENIED and the read-denial marker, and the secret
// bytes appear in no result; a grep over the whole home finds the public
// match and not the secret; the public file in the same home stays
// readable to both families (so each refusal is the deny-read set's). The
// client has no elicitation, so nothing can approve a denied read.
func TestDenyReadMeasuredInputs(t *testing.T) {
	h := newSecretHome(t)
	t.Setenv("HOME", h.dir)
	keyPath := filepath.Join(h.dir, ".ssh", "id_ed25519")
	canExec := subproc.Probe().LandlockABI >= 1
	for _, mode := range sandbox.Modes() {
		t.Run(string(mode), func(t *testing.T) {
			l := newLayout(t)
			fixture.Build(t, l.ws, "key-link => "+keyPath)
			cs := serveSession(t, "--workspace", l.ws, "--mode", string(mode), "--temp-root", l.tmp)
			marker := sandbox.ReadDenialMarker(mode)

			denied := func(t *testing.T, tool string, args map[string]any) {
				t.Helper()
				res, all := callTool(t, cs, tool, args)
				assert.True(t, res.IsError, "%s %v is refused: %s", tool, args, all)
				assert.EqualValues(t, "FS_READ_DENIED", res.Meta[mcpserver.CodeMetaKey], "%s %v: %s", tool, args, all)
				assert.Contains(t, all, marker, "%s %v", tool, args)
				assert.NotContains(t, all, h.key, "%s %v: the key never appears", tool, args)
				assert.NotContains(t, all, h.awsSecret, "%s %v: the AWS secret never appears", tool, args)
			}
			t.Run("read ~/.ssh/id_ed25519", func(t *testing.T) {
				denied(t, "read", map[string]any{"file_path": keyPath})
			})
			t.Run("read a workspace symlink to the key", func(t *testing.T) {
				denied(t, "read", map[string]any{"file_path": "key-link"})
			})
			t.Run("grep aws_secret over ~/.aws", func(t *testing.T) {
				denied(t, "grep", map[string]any{"pattern": "aws_secret", "path": filepath.Join(h.dir, ".aws"), "output_mode": "content"})
			})
			t.Run("grep aws_secret over the home skips ~/.aws", func(t *testing.T) {
				res, all := callTool(t, cs, "grep", map[string]any{
					"pattern": "aws_secret", "path": h.dir, "output_mode": "content", "include_hidden": true, "no_ignore": true,
				})
				require.False(t, res.IsError, all)
				assert.Contains(t, all, "goes in ~/.aws/credentials", "the public match is found")
				value, ok := res.StructuredContent.(map[string]any)
				require.True(t, ok, all)
				assert.EqualValues(t, 2, value["denied"], "the denied ~/.ssh and ~/.aws are skipped and counted: %s", all)
				assert.NotContains(t, all, h.awsSecret)
				assert.NotContains(t, all, h.key)
			})
			t.Run("read the public notes in the same home", func(t *testing.T) {
				res, all := callTool(t, cs, "read", map[string]any{"file_path": filepath.Join(h.dir, "notes.txt")})
				require.False(t, res.IsError, all)
				assert.Contains(t, all, "goes in ~/.aws/credentials")
			})
			if !canExec {
				t.Log("Landlock is not available on this kernel: the exec inputs are not run")
				return
			}
			t.Run("exec sees the fixture home", func(t *testing.T) {
				res, all := callTool(t, cs, "exec", map[string]any{"command": `printf 'home=%s\n' "$HOME"; cat ~/notes.txt`})
				require.False(t, res.IsError, all)
				assert.Contains(t, all, "home="+h.dir)
				assert.Contains(t, all, "goes in ~/.aws/credentials", "a command reads the public file beside the key")
			})
			for _, command := range []string{"cat ~/.ssh/id_ed25519", "cat " + keyPath, "cat key-link", "cat ~/.aws/credentials"} {
				t.Run("exec "+command, func(t *testing.T) {
					denied(t, "exec", map[string]any{"command": command})
				})
			}
		})
	}
}

// TestDenyReadFlagsEndToEnd (issue 24): --allow-read and --deny-read
// reach both families through serve: with --allow-read ~/.ssh the key is
// readable again (the user's choice), while a --deny-read '*.pem' in the
// workspace and the default workspace .env are refused and an
// .env.example template stays readable.
func TestDenyReadFlagsEndToEnd(t *testing.T) {
	h := newSecretHome(t)
	t.Setenv("HOME", h.dir)
	l := newLayout(t)
	fixture.Build(t, l.ws,
		"server.pem: PEMSECRET-"+h.key+"\n",
		".env: API_TOKEN=ENVSECRET-"+h.key+"\n",
		"app/.env.local: API_TOKEN=LOCALSECRET-"+h.key+"\n",
		".env.example: API_TOKEN=changeme\n",
	)
	cs := serveSession(t, "--workspace", l.ws, "--mode", "workspace-write", "--temp-root", l.tmp,
		"--allow-read", "~/.ssh", "--deny-read", "*.pem")
	marker := sandbox.ReadDenialMarker(sandbox.WorkspaceWrite)
	canExec := subproc.Probe().LandlockABI >= 1

	type input struct {
		tool string
		args map[string]any
	}
	reads := func(path string) []input {
		in := []input{{"read", map[string]any{"file_path": path}}}
		if canExec {
			in = append(in, input{"exec", map[string]any{"command": "cat " + path}})
		}
		return in
	}
	for path, content := range map[string]string{filepath.Join(h.dir, ".ssh", "id_ed25519"): h.key, ".env.example": "API_TOKEN=changeme"} {
		for _, in := range reads(path) {
			t.Run(in.tool+" "+path+" is readable", func(t *testing.T) {
				res, all := callTool(t, cs, in.tool, in.args)
				require.False(t, res.IsError, all)
				assert.Contains(t, all, content)
				assert.NotContains(t, all, marker)
			})
		}
	}
	for _, path := range []string{"server.pem", ".env", "app/.env.local"} {
		for _, in := range reads(path) {
			t.Run(in.tool+" "+path+" is refused", func(t *testing.T) {
				res, all := callTool(t, cs, in.tool, in.args)
				assert.True(t, res.IsError, all)
				assert.EqualValues(t, "FS_READ_DENIED", res.Meta[mcpserver.CodeMetaKey], all)
				assert.Contains(t, all, marker)
				assert.NotContains(t, all, h.key, "the secret never appears")
			})
		}
	}
}

// TestDenyReadEscalationEndToEnd (issue 24): a refused read retried with
// sandbox_permissions danger-full-access asks the user through the
// client; the prompt names the key file and says it is a credential read;
// an approval, even for the session (allow-session), reads it once, and
// the next read is refused again. A denial reads nothing.
func TestDenyReadEscalationEndToEnd(t *testing.T) {
	h := newSecretHome(t)
	t.Setenv("HOME", h.dir)
	keyPath := filepath.Join(h.dir, ".ssh", "id_ed25519")
	escalated := map[string]any{
		"file_path": keyPath, "sandbox_permissions": "danger-full-access", "justification": "The user asked to check the key's header.",
	}
	for _, tc := range []struct {
		decision string
		readable bool
	}{
		{decision: "allow-session", readable: true},
		{decision: "allow-once", readable: true},
		{decision: "deny"},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			l := newLayout(t)
			var (
				mu      sync.Mutex
				prompts []string
			)
			asked := func() []string {
				mu.Lock()
				defer mu.Unlock()
				return slices.Clone(prompts)
			}
			cs := serveSessionWith(t, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					defer mu.Unlock()
					prompts = append(prompts, req.Params.Message)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": tc.decision}}, nil
				},
			}, "--workspace", l.ws, "--mode", "workspace-write", "--temp-root", l.tmp)

			res, all := callTool(t, cs, "read", escalated)
			got := asked()
			require.Len(t, got, 1, "the user is asked once: %s", all)
			assert.Contains(t, got[0], `to read "`+keyPath+`"`)
			assert.Contains(t, got[0], "This is a credential read")
			assert.Contains(t, got[0], "~/.ssh (default)")
			if tc.readable {
				require.False(t, res.IsError, all)
				assert.Contains(t, all, h.key, "the approved read returns the file")
			} else {
				assert.True(t, res.IsError, all)
				assert.NotContains(t, all, h.key)
			}

			res, all = callTool(t, cs, "read", map[string]any{"file_path": keyPath})
			assert.True(t, res.IsError, all)
			assert.EqualValues(t, "FS_READ_DENIED", res.Meta[mcpserver.CodeMetaKey], all)
			assert.NotContains(t, all, h.key, "an approval reads once: the next read is refused")
			assert.Len(t, asked(), 1, "a read without the escalation asks nothing")
		})
	}
}
