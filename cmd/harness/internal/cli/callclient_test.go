package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/cli"
	"github.com/dsh-go/harness/services/audit"
)

// TestCallIsRecorded: `harness call` leaves the call's record in the
// audit log, naming itself as the client.
func TestCallIsRecorded(t *testing.T) {
	l := newLayout(t)
	logPath := filepath.Join(l.outside, "audit.jsonl")
	r := runCLI(t, []string{
		"call", "write", "--args", `{"file_path":"new.txt","content":"from the cli\n"}`,
		"--mode", "workspace-write", "--workspace", l.ws, "--temp-root", l.tmp, "--audit-log", logPath,
	}, "", false, nil)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	got, err := os.ReadFile(filepath.Join(l.ws, "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, "from the cli\n", string(got))

	raw, err := os.ReadFile(logPath)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	require.Len(t, lines, 1, string(raw))
	var rec audit.Record
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec))
	assert.True(t, strings.HasPrefix(rec.Client, "harness call "), rec.Client)
	assert.Equal(t, "write", rec.Tool)
	assert.Equal(t, "1", rec.Call)
	assert.Equal(t, audit.Allowed, rec.Decision)
	assert.Equal(t, []string{filepath.Join(l.ws, "new.txt")}, rec.Paths)
	assert.NotContains(t, string(raw), "from the cli")
}
