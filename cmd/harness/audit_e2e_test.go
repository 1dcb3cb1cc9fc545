//go:build linux

package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/sandbox"
)

// lockedBuffer is a bytes.Buffer safe for a process's writes and the
// test's reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeAuditLog runs `harness serve --audit-log FILE` in both protocol
// generations, makes a denied write, an allowed write and a command, stops
// the server and reads FILE back: one record per call, in order, of one
// session and the client that made them, with the canonical paths, the
// decisions, the marker, the bytes and the command; no content and no
// secret. The JSON log at info carries the denial.
func TestServeAuditLog(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap is not installed: the command runs confined")
	}
	const secret = "E2E-AUDIT-SECRET-3f9d-NEVER-LOGGED"
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			w := newE2EWorld(t)
			logPath := filepath.Join(w.outside, "state", "audit.jsonl")
			bin, err := buildOnce()
			require.NoError(t, err)
			var stderr lockedBuffer
			cmd := exec.Command(bin, "serve", "--log-level", "info", "--log-format", "json",
				"--workspace", w.ws, "--mode", "workspace-write", "--temp-root", w.ws, "--audit-log", logPath)
			cmd.Stderr = &stderr
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: p.version})
			require.NoError(t, err)

			outside := filepath.Join(w.outside, "x.txt")
			res := callTool(t, cs, "write", map[string]any{"file_path": outside, "content": secret})
			require.True(t, res.IsError)
			require.Equal(t, "FS_SANDBOX_DENIED", code(res))
			content := "inside " + secret + "\n"
			res = callTool(t, cs, "write", map[string]any{"file_path": "new.txt", "content": content})
			require.False(t, res.IsError, text(res))
			require.NoError(t, os.WriteFile(filepath.Join(w.ws, "secret.txt"), []byte(secret), 0o644))
			res = callTool(t, cs, "exec", map[string]any{"command": "cat secret.txt && exit 3"})
			require.False(t, res.IsError, text(res))
			require.Contains(t, text(res), secret, "the model sees the output")
			// Close waits for the server to exit: it drains its log first.
			require.NoError(t, cs.Close())
			require.True(t, cmd.ProcessState.Success(), "the server exits cleanly: %s", stderr.String())

			raw, err := os.ReadFile(logPath)
			require.NoError(t, err)
			assert.NotContains(t, string(raw), secret, "no content or output in the audit log")
			assert.NotContains(t, stderr.String(), secret, "nor in the server's log")
			fi, err := os.Stat(logPath)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

			var records []audit.Record
			sc := bufio.NewScanner(bytes.NewReader(raw))
			for sc.Scan() {
				var r audit.Record
				require.NoError(t, json.Unmarshal(sc.Bytes(), &r), sc.Text())
				records = append(records, r)
			}
			require.Len(t, records, 3, string(raw))
			for _, r := range records {
				assert.NotEmpty(t, r.Session)
				assert.Equal(t, records[0].Session, r.Session, "one connection, one session")
				assert.Equal(t, "e2e v0", r.Client)
				assert.Equal(t, "workspace-write", r.Mode)
				assert.False(t, r.Time.IsZero())
			}

			denied, allowed, command := records[0], records[1], records[2]
			assert.Equal(t, "write", denied.Tool)
			assert.Equal(t, audit.Denied, denied.Decision)
			assert.Equal(t, sandbox.DenialMarker(sandbox.WorkspaceWrite), denied.Marker)
			assert.Equal(t, audit.Error, denied.Outcome)
			assert.Equal(t, "FS_SANDBOX_DENIED", denied.Code)
			assert.Equal(t, []string{outside}, denied.Paths)

			assert.Equal(t, "write", allowed.Tool)
			assert.Equal(t, audit.Allowed, allowed.Decision)
			assert.Equal(t, audit.OK, allowed.Outcome)
			assert.Equal(t, []string{filepath.Join(w.ws, "new.txt")}, allowed.Paths)
			assert.Equal(t, int64(len(content)), allowed.Bytes)

			assert.Equal(t, "exec", command.Tool)
			assert.Equal(t, audit.Allowed, command.Decision)
			require.NotNil(t, command.Command)
			three := 3
			assert.Equal(t, &audit.Command{
				Line: "cat secret.txt && exit 3", Workdir: w.ws, Exit: &three,
				Stdout: int64(len(secret)), Journal: audit.NotJournaled,
				StartMS: command.Command.StartMS, RunMS: command.Command.RunMS,
			}, command.Command)
			assert.Positive(t, command.Command.StartMS, "the sandbox's start is recorded")

			var deniedLine map[string]any
			for line := range strings.SplitSeq(stderr.String(), "\n") {
				if strings.Contains(line, `"decision":"denied"`) {
					require.NoError(t, json.Unmarshal([]byte(line), &deniedLine), line)
				}
			}
			require.NotNil(t, deniedLine, "the denial is logged at info: %s", stderr.String())
			assert.Equal(t, "info", deniedLine["level"])
			assert.Equal(t, denied.Marker, deniedLine["marker"])
			assert.Equal(t, "write", deniedLine["tool"])
		})
	}
}
