//go:build linux

package execsandbox

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandbox"
)

// TestReservable (issue 34, the attack review's inputs): the paths a
// command may never create are a workspace root's top-level `.git` and
// host-run files, the host-run files but the root-only HEAD in a home that
// lies beneath a workspace root (not one above it, nor the root itself,
// nor one in a temp root), and $XDG_CONFIG_HOME's git and fish beneath a
// workspace root; none twice.
func TestReservable(t *testing.T) {
	protect, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{
		Unprotect: names(sandbox.HostRunFiles(), ".mcp.json", ".bashrc", ".config/git", "HEAD"), ConfigHome: "/w/cfg",
	})
	require.NoError(t, err)
	policy := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/w", OtherRoots: []string{"/o"}, TempRoots: []string{"/tmp"}}
	got := reservable(policy, protect, []string{"/w/home/u", "/w", "/", "/tmp/h", "/w/home/u"})
	assert.Equal(t, []string{
		"/w/.git", "/w/.mcp.json", "/w/.config/git", "/w/.bashrc", "/w/HEAD",
		"/w/home/u/.mcp.json", "/w/home/u/.config/git", "/w/home/u/.bashrc",
		"/w/cfg/git",
		"/o/.git", "/o/.mcp.json", "/o/.config/git", "/o/.bashrc", "/o/HEAD",
	}, got)
}

// names returns the names of all but keep.
func names(all []sandbox.HostRun, keep ...string) []string {
	var out []string
	for _, h := range all {
		if !slices.Contains(keep, h.Name) {
			out = append(out, h.Name)
		}
	}
	return out
}
