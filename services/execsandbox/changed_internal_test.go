//go:build linux

package execsandbox

import (
	"context"
	"errors"
	osexec "os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// TestBwrapResultCause (issue 34): a start refused because a path of the
// view vanished names the path and carries no bubblewrap-install remedy;
// another failure of bubblewrap carries the remedy only when bubblewrap
// cannot make a sandbox here at all.
func TestBwrapResultCause(t *testing.T) {
	path, err := osexec.LookPath("bwrap")
	if err != nil {
		t.Skip("bubblewrap (bwrap) is not installed")
	}
	bwrap, err := subproc.OpenProgram(path)
	require.NoError(t, err)
	if subproc.ProbeBwrap(bwrap) != nil {
		t.Skip("bubblewrap cannot make a sandbox here")
	}
	broken, err := subproc.OpenProgram("/bin/false")
	require.NoError(t, err)
	conf := &subproc.Confinement{}
	failed := func(t *testing.T, st subproc.Status, exe *subproc.Program) *exec.Error {
		t.Helper()
		_, err := bwrapResult(subproc.Outcome{Status: st}, nil, conf, exe, startAttempts)
		ee, ok := errors.AsType[*exec.Error](err)
		require.True(t, ok, "%v", err)
		t.Log(ee.Message)
		return ee
	}
	const gone = "/tmp/t/tmproot/repo-36/config"
	t.Run("a mount source that vanished", func(t *testing.T) {
		ee := failed(t, subproc.Status{Changed: true, Error: subproc.SandboxNotStarted + ": " + gone +
			" changed or vanished while bubblewrap made the command's view (bwrap: Can't get type of source " + gone + ": No such file or directory)"}, bwrap)
		assert.Equal(t, exec.CodeStartFailed, ee.Code)
		assert.Contains(t, ee.Message, gone+" changed or vanished")
		assert.NotContains(t, ee.Message, "Remedy")
		assert.NotContains(t, ee.Message, "bubblewrap package")
	})
	notMade := subproc.Status{Error: subproc.SandboxNotStarted + ": bwrap: Can't mkdir parents for /nonexistent/x: Read-only file system"}
	t.Run("a view bubblewrap could not make, on a host where it works", func(t *testing.T) {
		ee := failed(t, notMade, bwrap)
		assert.Equal(t, exec.CodeUnavailable, ee.Code)
		assert.Contains(t, ee.Message, "Can't mkdir parents for /nonexistent/x")
		assert.NotContains(t, ee.Message, "Remedy")
	})
	t.Run("a host where bubblewrap cannot make a sandbox", func(t *testing.T) {
		ee := failed(t, notMade, broken)
		assert.Equal(t, exec.CodeUnavailable, ee.Code)
		assert.Contains(t, ee.Message, "Can't mkdir parents for /nonexistent/x")
		assert.Contains(t, ee.Message, "Remedy: "+bwrapRemedy)
	})
}

// TestStartFresh (issue 34): a start whose view changed is made again, at
// most startAttempts times in all; one that started, failed otherwise or
// whose context ended is not.
func TestStartFresh(t *testing.T) {
	changed := subproc.Outcome{Status: subproc.Status{Changed: true, Error: "the protected path /w/.git/config changed before the command started"}}
	starts := func(outs ...subproc.Outcome) (func() (subproc.Outcome, *subproc.Confinement, error), *int) {
		n := 0
		return func() (subproc.Outcome, *subproc.Confinement, error) {
			out := outs[min(n, len(outs)-1)]
			n++
			return out, &subproc.Confinement{}, nil
		}, &n
	}
	start, n := starts(changed, changed, subproc.Outcome{Status: subproc.Status{Started: true}})
	out, _, tries, err := startFresh(t.Context(), start)
	require.NoError(t, err)
	assert.True(t, out.Status.Started)
	assert.Equal(t, 3, tries)
	assert.Equal(t, 3, *n)

	start, n = starts(changed)
	out, _, tries, _ = startFresh(t.Context(), start)
	assert.True(t, out.Status.Changed)
	assert.Equal(t, startAttempts, tries)
	assert.Equal(t, startAttempts, *n)

	start, n = starts(subproc.Outcome{Status: subproc.Status{Error: "cannot enter the workdir"}})
	_, _, tries, _ = startFresh(t.Context(), start)
	assert.Equal(t, 1, tries)
	assert.Equal(t, 1, *n)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	start, n = starts(changed)
	_, _, _, _ = startFresh(ctx, start)
	assert.Equal(t, 1, *n)
}

// TestHolders (issue 34): a member of a split git directory is held by that
// directory, anything else by itself, and nothing a command may never
// create (a workspace root's top-level `.git` and host-run files, and what
// they hold) has a holder.
func TestHolders(t *testing.T) {
	policy := sandbox.ExecutionPolicy{WorkspaceRoot: "/w", OtherRoots: []string{"/o"}, TempRoots: []string{"/tmp"}}
	found := []sandboxpolicy.ProtectedEntry{
		{Path: "/o/.git", Dir: true, Split: true},
		{Path: "/o/.git/config"},
		{Path: "/tmp/r", Dir: true, Split: true},
		{Path: "/tmp/r/config"},
		{Path: "/tmp/r/hooks", Dir: true, Missing: true},
		{Path: "/tmp/r/modules/m", Dir: true, Split: true},
		{Path: "/tmp/r/modules/m/config"},
		{Path: "/w/.git", Dir: true, Split: true},
		{Path: "/w/.git/hooks", Dir: true},
		{Path: "/w/.git/modules/s", Dir: true, Split: true},
		{Path: "/w/.git/modules/s/config"},
		{Path: "/w/.mcp.json"},
		{Path: "/w/sub/.git", Dir: true},
		{Path: "/w/sub/.mcp.json"},
	}
	protect, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{})
	require.NoError(t, err)
	got := holders(found, sandboxpolicy.Reservable(policy, protect, nil))
	assert.Equal(t, map[string]string{
		"/o/.git":                  "",
		"/o/.git/config":           "",
		"/tmp/r":                   "/tmp/r",
		"/tmp/r/config":            "/tmp/r",
		"/tmp/r/hooks":             "/tmp/r",
		"/tmp/r/modules/m":         "/tmp/r/modules/m",
		"/tmp/r/modules/m/config":  "/tmp/r/modules/m",
		"/w/.git":                  "",
		"/w/.git/hooks":            "",
		"/w/.git/modules/s":        "/w/.git/modules/s",
		"/w/.git/modules/s/config": "/w/.git/modules/s",
		"/w/.mcp.json":             "",
		"/w/sub/.git":              "/w/sub/.git",
		"/w/sub/.mcp.json":         "/w/sub/.mcp.json",
	}, got)
}
