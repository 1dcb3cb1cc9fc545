package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/cli"
	"github.com/dsh-go/harness/services/audit"
)

// auditT0 is the time of the first record of auditLog.
var auditT0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// auditLog writes the log a server with XDG_STATE_HOME=state would, in
// files small enough to rotate, and returns the state directory: a read,
// a denied write, an approved command, a declined edit, an invalid call,
// a command line with a terminal escape, a newline and bidi controls, each
// a minute apart.
func auditLog(t *testing.T) string {
	t.Helper()
	state := t.TempDir()
	path := filepath.Join(state, "harness", "audit.jsonl")
	exit0, exit2 := 0, 2
	recs := []audit.Record{
		{Session: "s1", Client: "test 1", Tool: "read", Mode: "read-only", Paths: []string{"/ws/src/a.go"}, Decision: audit.Allowed, Outcome: audit.OK, Bytes: 120},
		{Session: "s1", Tool: "write", Mode: "read-only", Paths: []string{"/etc/passwd"}, Decision: audit.Denied, Marker: "[sandbox: read-only]", Outcome: audit.Error, Code: "FS_DENIED"},
		{
			Session: "s2", Tool: "exec", Mode: "danger-full-access", Decision: audit.Approved, Escalation: &audit.Escalation{What: "danger-full-access", Answer: "allowed-once", Scope: "once"}, Outcome: audit.OK,
			Command: &audit.Command{Line: "make install", Workdir: "/ws", Exit: &exit0, Stdout: 10, Journal: "not journaled"},
		},
		{Session: "s2", Tool: "edit", Paths: []string{"/ws/src/b\u202egnp.go"}, Decision: audit.Declined, Escalation: &audit.Escalation{What: "workspace-write", Answer: "rejected"}, Outcome: audit.Error, Code: "SANDBOX_ESCALATION_REJECTED", Lost: 3},
		{Session: "s1", Tool: "read", Decision: audit.Invalid, Outcome: audit.Error, Code: "INVALID_ARGUMENT"},
		{Session: "s1", Tool: "exec", Decision: audit.Allowed, Outcome: audit.Error, Code: "EXEC_FAILED", Command: &audit.Command{Line: "printf '\x1b[2J'\tgone\nFAKE \u2066row\u009b", Workdir: "/ws/src", Exit: &exit2, Journal: "not journaled"}},
	}
	for i, r := range recs {
		r.Time = auditT0.Add(time.Duration(i) * time.Minute)
		l, err := audit.OpenLog(audit.LogOptions{Path: path, MaxBytes: 600, Keep: 10})
		require.NoError(t, err)
		l.Append(r)
		require.NoError(t, l.Close())
	}
	files, err := audit.Files(path)
	require.NoError(t, err)
	require.Greater(t, len(files), 1, "the log spans rotated files")
	return state
}

// sessionsOf returns the session and tool of each JSON line of out.
func linesOf(t *testing.T, out string) []audit.Record {
	t.Helper()
	var recs []audit.Record
	for l := range strings.SplitSeq(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		var r audit.Record
		require.NoError(t, json.Unmarshal([]byte(l), &r), l)
		recs = append(recs, r)
	}
	return recs
}

func TestAuditCommand(t *testing.T) {
	state := auditLog(t)
	vars := map[string]string{"XDG_STATE_HOME": state}
	tests := []struct {
		name  string
		args  []string
		vars  map[string]string
		code  int
		calls []string // "session/tool/decision" of each record printed with --json
		// golden names the stdout golden file (table output).
		golden   string
		stderrIn string
	}{
		{name: "the table of every record, oldest first", args: []string{"audit"}, golden: "audit_table"},
		{name: "a session", args: []string{"audit", "--json", "--session", "s2"}, calls: []string{"s2/exec/approved", "s2/edit/declined"}},
		{name: "tools", args: []string{"audit", "--json", "--tool", "write", "--tool", "edit"}, calls: []string{"s1/write/denied", "s2/edit/declined"}},
		{name: "a decision", args: []string{"audit", "--json", "--decision", "invalid"}, calls: []string{"s1/read/invalid"}},
		{name: "since a time", args: []string{"audit", "--json", "--since", "2026-12-01T10:04:00Z"}, calls: []string{"s1/read/invalid", "s1/exec/allowed"}},
		{name: "until a time", args: []string{"audit", "--json", "--until", "2026-12-01T10:01:00Z"}, calls: []string{"s1/read/allowed"}},
		{name: "since a duration: records a year old are not in the last 2h", args: []string{"audit", "--json", "--since", "2h"}},
		{name: "a path prefix: a command's workdir counts", args: []string{"audit", "--json", "--path", "/ws/src"}, calls: []string{"s1/read/allowed", "s2/edit/declined", "s1/exec/allowed"}},
		{name: "filters combine", args: []string{"audit", "--json", "--session", "s1", "--tool", "exec"}, calls: []string{"s1/exec/allowed"}},
		{name: "--audit-log names the log", args: []string{"audit", "--json", "--decision", "denied", "--audit-log", filepath.Join(state, "harness", "audit.jsonl")}, vars: map[string]string{}, calls: []string{"s1/write/denied"}},
		{name: "HARNESS_AUDIT_LOG names the log", args: []string{"audit", "--json", "--decision", "denied"}, vars: map[string]string{"HARNESS_AUDIT_LOG": filepath.Join(state, "harness", "audit.jsonl")}, calls: []string{"s1/write/denied"}},
		{name: "a mistyped decision", args: []string{"audit", "--decision", "denid"}, code: cli.ExitUsage, stderrIn: `audit: --decision "denid": want one of allowed, denied, approved, declined, invalid, refused (did you mean "denied"?)`},
		{name: "a bad time", args: []string{"audit", "--since", "yesterday"}, code: cli.ExitUsage, stderrIn: `audit: --since "yesterday": want a time such as 2026-12-01T09:00:00Z or a duration such as 2h`},
		{name: "a positional argument", args: []string{"audit", "s1"}, code: cli.ExitUsage},
		{name: "the log off", args: []string{"audit", "--audit-log", "off"}, code: cli.ExitUsage, stderrIn: "audit: no audit log: --audit-log is off"},
		{name: "no state directory", args: []string{"audit"}, vars: map[string]string{}, code: cli.ExitUsage, stderrIn: "there is no state directory"},
		{name: "no log yet", args: []string{"audit"}, vars: map[string]string{"XDG_STATE_HOME": t.TempDir()}, code: cli.ExitToolError, stderrIn: "audit: no audit log at "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := vars
			if tt.vars != nil {
				v = tt.vars
			}
			r := runCLI(t, tt.args, "", false, v)
			require.Equal(t, tt.code, r.code, r.stderr)
			if tt.stderrIn != "" {
				assert.Contains(t, r.stderr, tt.stderrIn)
			}
			switch {
			case tt.golden != "":
				golden(t, tt.golden, r.stdout)
			case tt.code == cli.ExitOK:
				var got []string
				for _, rec := range linesOf(t, r.stdout) {
					got = append(got, rec.Session+"/"+rec.Tool+"/"+string(rec.Decision))
				}
				assert.Equal(t, tt.calls, got)
			default:
				assert.Empty(t, r.stdout)
			}
		})
	}
}

// The table shows control and format characters as escapes: one line a
// record, no ESC, no newline, no bidi control reaches the terminal.
func TestAuditTableEscapes(t *testing.T) {
	r := runCLI(t, []string{"audit"}, "", false, map[string]string{"XDG_STATE_HOME": auditLog(t)})
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	assert.Equal(t, 7, strings.Count(r.stdout, "\n"), "a header and six records")
	assert.NotContains(t, r.stdout, "\x1b")
	assert.NotContains(t, r.stdout, "\t")
	for _, c := range []string{"\u202e", "\u2066", "\u009b"} {
		assert.NotContains(t, r.stdout, c)
	}
	assert.Contains(t, r.stdout, `/ws/src/b\u202egnp.go`)
	assert.Contains(t, r.stdout, `$ printf '\x1b[2J'\tgone\nFAKE \u2066row\u009b (exit 2)`)
}

// --json prints the lines as the log holds them, byte for byte.
func TestAuditCommandJSONIsTheLog(t *testing.T) {
	state := auditLog(t)
	path := filepath.Join(state, "harness", "audit.jsonl")
	files, err := audit.Files(path)
	require.NoError(t, err)
	var want strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		want.Write(b)
	}
	r := runCLI(t, []string{"audit", "--json"}, "", false, map[string]string{"XDG_STATE_HOME": state})
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	assert.Equal(t, want.String(), r.stdout)
}

func TestAuditCommandSkipsATornLine(t *testing.T) {
	state := auditLog(t)
	path := filepath.Join(state, "harness", "audit.jsonl")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"time":"2026-12-01T11:00:00Z","session":"s9","tool":"wri`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	r := runCLI(t, []string{"audit", "--json"}, "", false, map[string]string{"XDG_STATE_HOME": state})
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	assert.Len(t, linesOf(t, r.stdout), 6)
	assert.Contains(t, r.stderr, "harness: audit: 1 lines of "+path+" were not records")
}

// harness policy shows the log and refuses one a call could write.
func TestPolicyAuditLog(t *testing.T) {
	l := newLayout(t)
	outside := filepath.Join(l.outside, "logs", "audit.jsonl")
	r := runCLI(t, []string{"policy", "--workspace", l.ws, "--temp-root", l.tmp, "--audit-log", outside}, "", false, nil)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "audit log:      "+outside+" (one JSON line per call; rotated past 67108864 bytes; harness audit reads it)\n")
	assert.NoDirExists(t, filepath.Dir(outside), "policy opens no log")

	r = runCLI(t, []string{"policy", "--json", "--workspace", l.ws, "--temp-root", l.tmp, "--audit-log", outside, "--audit-max-bytes", "1024"}, "", false, nil)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var rep cli.PolicyReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.Equal(t, outside, rep.AuditLog)
	assert.Equal(t, int64(1024), rep.AuditMaxBytes)

	r = runCLI(t, []string{"policy", "--workspace", l.ws, "--temp-root", l.tmp, "--audit-log", "off"}, "", false, nil)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "audit log:      off\n")

	inside := filepath.Join(l.ws, "audit.jsonl")
	r = runCLI(t, []string{"policy", "--workspace", l.ws, "--temp-root", l.tmp, "--audit-log", inside}, "", false, nil)
	require.Equal(t, cli.ExitUsage, r.code)
	assert.Contains(t, r.stderr, "harness: --audit-log: "+inside+" is inside "+l.ws+", which calls may write")
	assert.NoFileExists(t, inside)
}

// BenchmarkAuditCommand runs `harness audit` over a 100,000-record log
// (issue 25: it answers in under a second), its output discarded: the
// whole table, the whole log as --json, and one session's table.
func BenchmarkAuditCommand(b *testing.B) {
	state := b.TempDir()
	path := filepath.Join(state, "harness", "audit.jsonl")
	require.NoError(b, os.MkdirAll(filepath.Dir(path), 0o700))
	var buf strings.Builder
	exit := 0
	for i := range 100_000 {
		r := audit.Record{
			Time: auditT0.Add(time.Duration(i) * time.Second), Session: fmt.Sprintf("session-%03d", i%100), Client: "claude-code 2.1.0",
			Tool: "write", Call: fmt.Sprint(i), Mode: "workspace-write", Paths: []string{fmt.Sprintf("/home/dev/project/src/pkg%02d/file%04d.go", i%50, i%1000)},
			Decision: audit.Allowed, Outcome: audit.OK, Bytes: 1024, DurationMS: 1.25,
		}
		if i%2 == 1 {
			r.Tool, r.Paths = "exec", nil
			r.Command = &audit.Command{Line: "go test ./...", Workdir: "/home/dev/project", Exit: &exit, Stdout: 2048, Journal: "not journaled"}
		}
		line, err := json.Marshal(r)
		require.NoError(b, err)
		buf.Write(line)
		buf.WriteByte('\n')
	}
	require.NoError(b, os.WriteFile(path, []byte(buf.String()), 0o600))
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"table", []string{"audit"}},
		{"json", []string{"audit", "--json"}},
		{"session-table", []string{"audit", "--session", "session-042"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				code := cli.Run(b.Context(), bc.args, cli.Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: getenv(map[string]string{"XDG_STATE_HOME": state})})
				require.Equal(b, cli.ExitOK, code)
			}
		})
	}
}

func TestAuditHelp(t *testing.T) {
	for _, args := range [][]string{{"help", "audit"}, {"audit", "--help"}} {
		r := runCLI(t, args, "", false, nil)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		golden(t, "help_audit", r.stdout)
	}
}

// TestPolicyWithoutAWritableHome: where the state directory cannot be
// made (a home whose .local is a file stops root too), policy says the
// journal and the default audit log are off and why, as serve runs, and
// makes nothing; an audit log the user named there is still refused.
func TestPolicyWithoutAWritableHome(t *testing.T) {
	l := newLayout(t)
	home := filepath.Join(l.outside, "home")
	require.NoError(t, os.Mkdir(home, 0o755))
	local := filepath.Join(home, ".local")
	require.NoError(t, os.WriteFile(local, []byte("a file\n"), 0o644))
	t.Setenv("XDG_STATE_HOME", "") // the journal reads the process's environment
	t.Setenv("HOME", home)
	vars := map[string]string{"HOME": home}

	r := runCLI(t, []string{"policy", "--json", "--workspace", l.ws, "--temp-root", l.tmp}, "", false, vars)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var rep cli.PolicyReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.Nil(t, rep.Journal)
	assert.Contains(t, rep.JournalUnavailable, "cannot make the journal directory \""+filepath.Join(local, "state", "harness", "journal")+"\"")
	assert.Empty(t, rep.AuditLog)
	assert.Contains(t, rep.AuditLogUnavailable, "not a directory: calls are not audited")

	r = runCLI(t, []string{"policy", "--workspace", l.ws, "--temp-root", l.tmp}, "", false, vars)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "audit log:      none (mkdir "+local+": not a directory: calls are not audited")
	assert.Contains(t, r.stdout, "journal:        off (journal open: cannot make the journal directory")
	got, err := os.ReadFile(local)
	require.NoError(t, err)
	assert.Equal(t, "a file\n", string(got))

	named := filepath.Join(local, "audit.jsonl")
	r = runCLI(t, []string{"serve", "--workspace", l.ws, "--temp-root", l.tmp, "--audit-log", named}, "", false, vars)
	assert.Equal(t, cli.ExitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "harness: --audit-log: ")
}
