//go:build linux

package toolfs_test

import (
	"context"
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

// rdDir returns a fresh canonical temporary directory.
func rdDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return dir
}

// rdLocal returns a local backend whose own working directory is cwd.
func rdLocal(t testing.TB, cwd string) *fslocal.FileSystem {
	t.Helper()
	f, err := fslocal.New(fslocal.Config{Cwd: cwd}, nil)
	require.NoError(t, err)
	return f
}

// rdFile writes content to dir/name, creating parents.
func rdFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// rdCounting is an fs.Service decorator counting the backend calls the tool
// layer makes (T-09, T-27, T-33).
type rdCounting struct {
	fs.Service
	stats, readTexts, streams atomic.Int64
}

func (c *rdCounting) Stat(ctx context.Context, target fs.Target) (*fs.Info, error) {
	c.stats.Add(1)
	return c.Service.Stat(ctx, target)
}

func (c *rdCounting) ReadText(ctx context.Context, target fs.Target) (string, error) {
	c.readTexts.Add(1)
	return c.Service.ReadText(ctx, target)
}

func (c *rdCounting) StreamText(ctx context.Context, target fs.Target) iter.Seq2[string, error] {
	c.streams.Add(1)
	return c.Service.StreamText(ctx, target)
}

// rdObservation is one recorded observation.
type rdObservation struct {
	Session *sandbox.Owner
	Target  fs.Target
	Obs     fs.Observation
}

// rdRecorder is an fs.Observer that records every observation in order.
type rdRecorder struct {
	mu   sync.Mutex
	seen []rdObservation
}

func (r *rdRecorder) Observe(sess *sandbox.Owner, target fs.Target, obs fs.Observation) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, rdObservation{Session: sess, Target: target, Obs: obs})
	return nil
}

func (r *rdRecorder) all() []rdObservation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]rdObservation(nil), r.seen...)
}

// rdTools builds the tools over fsys with the given config and observers.
func rdTools(t testing.TB, cfg toolfs.Config, fsys fs.Service, observers ...fs.Observer) *toolfs.Tools {
	t.Helper()
	tools, err := toolfs.New(cfg, toolfs.Deps{FS: fsys, Observers: observers})
	require.NoError(t, err)
	return tools
}

// rdCall runs tl with the raw JSON arguments args.
func rdCall(t testing.TB, tl *tool.Tool, sess *session.Session, args string) tool.Result {
	t.Helper()
	require.True(t, json.Valid([]byte(args)), "test arguments must be valid JSON: %s", args)
	return tl.Handler(session.NewContext(context.Background(), sess), tool.Call{ID: "call-1", Arguments: json.RawMessage(args)})
}

// rdArgs marshals args to JSON.
func rdArgs(t testing.TB, args map[string]any) string {
	t.Helper()
	b, err := json.Marshal(args)
	require.NoError(t, err)
	return string(b)
}

// rdEnvelope is the exact read envelope of dp around body (spec section 1).
func rdEnvelope(dp, body string) string {
	return "<path>" + dp + "</path>\n<type>file</type>\n<content>\n" + body + "\n</content>"
}

// rdListing is the exact list envelope of dp around body.
func rdListing(dp, body string) string {
	return "<path>" + dp + "</path>\n<type>directory</type>\n<entries>\n" + body + "\n</entries>"
}

// rdWantCode is the code a failed call carries: the FS_* code when there is
// one, else INVALID_ARGUMENT (argument errors).
func rdWantCode(code fs.Code) errcode.Code {
	if code == "" {
		return errcode.InvalidArgument
	}
	return code
}
