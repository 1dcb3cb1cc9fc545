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

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/textfile"
	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/readbeforewrite"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

// wrRecorder decorates an fs.Service to observe what the tool layer asks of
// the backend: the options of every WriteText, the request of every
// EditText, the number of Stat calls. It can inject an error in place of a
// write or an edit (the backend is then not called) and run a hook before
// each edit reaches the backend.
type wrRecorder struct {
	fs.Service

	stats atomic.Int32

	mu       sync.Mutex
	writes   []fs.WriteOptions
	edits    []fs.EditRequest
	writeErr error
	editErr  error
}

func (r *wrRecorder) Stat(ctx context.Context, target fs.Target) (*fs.Info, error) {
	r.stats.Add(1)
	return r.Service.Stat(ctx, target)
}

func (r *wrRecorder) WriteText(ctx context.Context, target fs.Target, content string, opts fs.WriteOptions) (fs.WriteOutcome, error) {
	r.mu.Lock()
	r.writes = append(r.writes, opts)
	injected := r.writeErr
	r.mu.Unlock()
	if injected != nil {
		return fs.WriteOutcome{}, injected
	}
	return r.Service.WriteText(ctx, target, content, opts)
}

func (r *wrRecorder) EditText(ctx context.Context, target fs.Target, req fs.EditRequest) (fs.EditOutcome, error) {
	r.mu.Lock()
	r.edits = append(r.edits, req)
	injected := r.editErr
	r.mu.Unlock()
	if injected != nil {
		return fs.EditOutcome{}, injected
	}
	return r.Service.EditText(ctx, target, req)
}

func (r *wrRecorder) writeCalls() []fs.WriteOptions {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]fs.WriteOptions(nil), r.writes...)
}

func (r *wrRecorder) editCalls() []fs.EditRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]fs.EditRequest(nil), r.edits...)
}

// reset forgets the recorded writes and edits.
func (r *wrRecorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes, r.edits = nil, nil
}

func (r *wrRecorder) injectWrite(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writeErr = err
}

func (r *wrRecorder) injectEdit(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.editErr = err
}

// wrApprovals records every approval request and answers with a fixed
// outcome.
type wrApprovals struct {
	mu      sync.Mutex
	outcome sandbox.Outcome
	reqs    []sandbox.ApprovalRequest
}

func (a *wrApprovals) approver() sandbox.Approver {
	return sandbox.ApproverFunc(func(_ context.Context, req sandbox.ApprovalRequest) (sandbox.Outcome, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.reqs = append(a.reqs, req)
		return a.outcome, nil
	})
}

func (a *wrApprovals) asked() []sandbox.ApprovalRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]sandbox.ApprovalRequest(nil), a.reqs...)
}

// wrSetup describes one composition of the tools.
type wrSetup struct {
	// Cwd is the backend's configured working directory.
	Cwd string
	// Sandbox, when set, mounts fssandbox with this policy config instead
	// of the bare fslocal.
	Sandbox *sandboxpolicy.Config
	// Bare leaves out readbeforewrite (no Intents, no Observers).
	Bare bool
	// Approver is the escalation approver, nil for none.
	Approver sandbox.Approver
	// Observers are extra observers, told before readbeforewrite.
	Observers []fs.Observer
	// Config is the tools' configuration (zero: the defaults).
	Config toolfs.Config
	// Sink receives every call's audit record, nil for none.
	Sink audit.Sink
}

// wrEnv is a composed tool set over a recorded backend.
type wrEnv struct {
	t      *testing.T
	fs     *wrRecorder
	tools  *toolfs.Tools
	rbw    *readbeforewrite.Policy // nil in a bare deployment
	policy *sandboxpolicy.Service  // nil under fslocal
}

func wrNew(t *testing.T, s wrSetup) *wrEnv {
	t.Helper()
	e := &wrEnv{t: t}
	var backend fs.Service
	if s.Sandbox != nil {
		policy, err := sandboxpolicy.New(*s.Sandbox)
		require.NoError(t, err)
		sb, err := fssandbox.New(policy, fslocal.Config{Cwd: s.Cwd}, fssandbox.Config{}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, sb.Close()) })
		backend, e.policy = sb, policy
	} else {
		local, err := fslocal.New(fslocal.Config{Cwd: s.Cwd}, nil)
		require.NoError(t, err)
		backend = local
	}
	e.fs = &wrRecorder{Service: backend}
	deps := toolfs.Deps{FS: e.fs, Policy: e.policy, Approver: s.Approver, Observers: s.Observers, Sink: s.Sink}
	if !s.Bare {
		e.rbw = readbeforewrite.New()
		deps.Intents = e.rbw
		deps.Observers = append(append([]fs.Observer(nil), s.Observers...), e.rbw)
	}
	tools, err := toolfs.New(s.Config, deps)
	require.NoError(t, err)
	e.tools = tools
	return e
}

// wrLocal is a policy (or, with bare, a bare) deployment over fslocal whose
// configured working directory is cwd.
func wrLocal(t *testing.T, cwd string, bare bool) *wrEnv {
	t.Helper()
	return wrNew(t, wrSetup{Cwd: cwd, Bare: bare})
}

func wrCall(t testing.TB, tl *tool.Tool, sess *session.Session, args map[string]any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	return tl.Handler(session.NewContext(context.Background(), sess), tool.Call{ID: tl.Name, Arguments: raw})
}

func (e *wrEnv) write(sess *session.Session, args map[string]any) tool.Result {
	e.t.Helper()
	return wrCall(e.t, e.tools.Write(), sess, args)
}

func (e *wrEnv) edit(sess *session.Session, args map[string]any) tool.Result {
	e.t.Helper()
	return wrCall(e.t, e.tools.Edit(), sess, args)
}

func (e *wrEnv) read(sess *session.Session, args map[string]any) tool.Result {
	e.t.Helper()
	return wrCall(e.t, e.tools.Read(), sess, args)
}

// mustRead reads path with the read tool and fails the test on an error.
func (e *wrEnv) mustRead(sess *session.Session, path string) tool.Result {
	e.t.Helper()
	res := e.read(sess, map[string]any{"file_path": path})
	require.False(e.t, res.IsError, res.Text)
	return res
}

// wrFingerprint is the fingerprint a whole-file read of the UTF-8 file p
// records: its size and the hash of its bytes (spec difference 14).
func wrFingerprint(t *testing.T, p string) fs.Fingerprint {
	t.Helper()
	raw, err := os.ReadFile(p)
	require.NoError(t, err)
	h := textfile.NewTextHash()
	h.Write(string(raw))
	return fs.Fingerprint{Size: int64(len(raw)), Hash: fs.ContentHash(h.Sum())}
}

// version is the backend's current version of the absolute path p.
func (e *wrEnv) version(p string) fs.Version {
	e.t.Helper()
	target, err := e.fs.Resolve(context.Background(), p, fs.ResolveOptions{})
	require.NoError(e.t, err)
	info, err := e.fs.Service.Stat(context.Background(), target)
	require.NoError(e.t, err)
	require.NotNil(e.t, info, "%s must exist", p)
	return info.Version
}

// target resolves the absolute path p on the backend, without counting.
func (e *wrEnv) target(p string) fs.Target {
	e.t.Helper()
	target, err := e.fs.Resolve(context.Background(), p, fs.ResolveOptions{})
	require.NoError(e.t, err)
	return target
}

// wrBase returns a fresh, canonical temporary directory.
func wrBase(t *testing.T) string {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return base
}

func wrMkdir(t *testing.T, p string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(p, 0o755))
	return p
}

func wrPut(t testing.TB, p, content string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func wrDisk(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// wrWriteText is the exact text of a successful write (spec section 1).
func wrWriteText(dp string, created bool) string {
	verb := "Updated file"
	if created {
		verb = "Created file"
	}
	return "<path>" + dp + "</path>\n<type>file</type>\n<content>\n" + verb + "\n</content>"
}

// wrEditText is the exact text of a successful edit (spec section 1).
func wrEditText(dp string, all bool) string {
	if all {
		return "The file " + dp + " has been updated. All occurrences were successfully replaced."
	}
	return "The file " + dp + " has been updated successfully."
}

// wrOK fails the test unless res succeeded.
func wrOK(t *testing.T, res tool.Result) {
	t.Helper()
	require.False(t, res.IsError, res.Text)
	require.Empty(t, res.Code)
}

// wrFail asserts res is an error with exactly text and code.
func wrFail(t *testing.T, res tool.Result, code fs.Code, text string) {
	t.Helper()
	assert.True(t, res.IsError, "want an error, got %q", res.Text)
	assert.EqualValues(t, string(code), res.Code)
	assert.Equal(t, text, res.Text)
	assert.Nil(t, res.Value, "an error carries no value")
}

func wrStr(s string) *string { return &s }

// wrDenial is the exact text of a sandbox denial under mode (T-94).
func wrDenial(mode sandbox.Mode) string {
	return "Error: [sandbox: file access denied under " + string(mode) + " mode]\n" +
		"[sandbox: escalation available — retry this exact operation once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]"
}

// wrSandboxCfg is a policy config with default mode and workspace root ws
// and no temp roots, so ws is the only root workspace-write allows.
func wrSandboxCfg(mode sandbox.Mode, ws string) *sandboxpolicy.Config {
	return &sandboxpolicy.Config{Mode: mode, WorkspaceRoot: ws, TempRoots: []string{}}
}

// wrConforms asserts that the JSON encoding of value validates against
// schema, as an MCP server validates structured content.
func wrConforms(t *testing.T, schema *jsonschema.Schema, value any) {
	t.Helper()
	raw, err := json.Marshal(value)
	require.NoError(t, err)
	var instance any
	require.NoError(t, json.Unmarshal(raw, &instance))
	rs, err := schema.Resolve(nil)
	require.NoError(t, err)
	assert.NoError(t, rs.Validate(instance), "%s", raw)
}

// wrEscalationCode is the code a failed escalating call carries: code when it
// is an FS_* error; else INVALID_ARGUMENT for a malformed request and
// SANDBOX_ESCALATION_REFUSED for a refusal.
func wrEscalationCode(code fs.Code, text string) fs.Code {
	switch {
	case code != "":
		return code
	case strings.HasPrefix(text, "Error: invalid escalation"), strings.HasPrefix(text, "Error: invalid justification"),
		strings.Contains(text, "is not available in this composition"):
		return errcode.InvalidArgument
	default:
		return sandboxpolicy.CodeEscalationRefused
	}
}

// wrCaseEnv is what a write or edit table case works with.
type wrCaseEnv struct {
	e    *wrEnv
	ws   string
	sess *session.Session
	v    fs.Version     // the version recorded by prep, if any
	fp   fs.Fingerprint // the content recorded by prep, if any
}

// wrCase is one write or edit table case.
type wrCase struct {
	name      string
	bare      bool
	noSession bool
	files     []string
	prep      func(t *testing.T, x *wrCaseEnv)
	args      map[string]any
	check     func(t *testing.T, x *wrCaseEnv, res tool.Result)
}

// wrRunCases runs write or edit table cases (kind "write" or "edit") on a
// fresh workspace each, and checks what every case owes: no stat in the tool
// layer (T-33), a failed call changes nothing on disk, a successful one
// conforms to the output schema, and no staging residue.
func wrRunCases(t *testing.T, tests []wrCase, kind string) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := wrBase(t)
			fixture.Build(t, ws, tc.files...)
			x := &wrCaseEnv{e: wrLocal(t, ws, tc.bare), ws: ws, sess: session.New("s1", ws)}
			if tc.prep != nil {
				tc.prep(t, x)
			}
			before := fixture.Snapshot(t, ws)
			x.e.fs.reset()
			sess := x.sess
			if tc.noSession {
				sess = nil
			}
			stats := x.e.fs.stats.Load()
			call, schema := x.e.write, x.e.tools.Write().OutputSchema
			if kind == "edit" {
				call, schema = x.e.edit, x.e.tools.Edit().OutputSchema
			}
			res := call(sess, tc.args)
			assert.Equal(t, stats, x.e.fs.stats.Load(), "T-33 %s calls stat zero times in the tool layer", kind)
			tc.check(t, x, res)
			if res.IsError {
				assert.Equal(t, before, fixture.Snapshot(t, ws), "a failed %s changes nothing on disk", kind)
			} else {
				wrConforms(t, schema, res.Value)
			}
			assert.Empty(t, fixture.Residue(t, ws))
		})
	}
}
