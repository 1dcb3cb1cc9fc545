//go:build linux

package fssandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// TestDenyReadHardLinkBeyondALargeStore (issue 34's review of the bounds
// over all denied directories): a hard link to a key in one denied
// directory is refused however many files another one, listed first,
// holds (20,100 here, past the index's bound of 20,000 files, which is
// each directory's own); the key's bytes are never returned.
func TestDenyReadHardLinkBeyondALargeStore(t *testing.T) {
	ctx := context.Background()
	base, err := os.MkdirTemp("/var/tmp", "fence-hardlink-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	base, err = filepath.EvalSymlinks(base)
	require.NoError(t, err)
	ws, large, vault := filepath.Join(base, "ws"), filepath.Join(base, "large"), filepath.Join(base, "vault")
	fillTree(t, large, 201, 100)
	require.NoError(t, os.MkdirAll(ws, 0o755))
	require.NoError(t, os.MkdirAll(vault, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(vault, "key"), []byte(keyMarker+"\n"), 0o600))
	require.NoError(t, os.Link(filepath.Join(vault, "key"), filepath.Join(ws, "hl")))

	f := newSandbox(t, sandboxpolicy.Config{
		Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws, TempRoots: []string{},
		DenyRead: []string{large, vault},
	}, ws)
	tg, err := f.Resolve(ctx, "hl", fs.ResolveOptions{})
	require.NoError(t, err)
	text, err := f.ReadText(ctx, tg)
	assert.Equal(t, fs.CodeReadDenied, fs.CodeOf(err), "%v", err)
	assert.NotContains(t, text, keyMarker)
	b, err := os.ReadFile(filepath.Join(ws, "hl"))
	require.NoError(t, err)
	assert.Equal(t, keyMarker+"\n", string(b), "the link is left as it was")
}
