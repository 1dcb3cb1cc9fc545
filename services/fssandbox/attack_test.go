package fssandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

func TestAttackRootReplacedBySymlink(t *testing.T) {
	w := newWorld(t)
	f := w.sandbox(t, sandboxpolicy.WorkspaceWrite)
	require.NoError(t, os.Rename(w.ws, w.ws+".real"))
	require.NoError(t, os.Symlink(w.outside, w.ws))
	before := fixture.Snapshot(t, w.outside)
	tg, err := f.Resolve(context.Background(), "x.txt", fs.ResolveOptions{})
	require.NoError(t, err)
	_, err = f.WriteText(context.Background(), tg, "pwned", fs.WriteOptions{})
	t.Logf("err=%v", err)
	assert.Equal(t, before, fixture.Snapshot(t, w.outside))
	_ = filepath.Join
}

func TestAttackRelativePolicyRoot(t *testing.T) {
	w := newWorld(t)
	f := w.sandbox(t, sandboxpolicy.ReadOnly)
	wd, err := os.Getwd()
	require.NoError(t, err)
	rel, err := filepath.Rel(wd, w.outside)
	require.NoError(t, err)
	before := fixture.Snapshot(t, w.outside)
	for _, root := range []string{rel, rel + "/", "./" + rel} {
		pol := &sandboxpolicy.ExecutionPolicy{Mode: sandboxpolicy.WorkspaceWrite, WorkspaceRoot: root}
		tg, err := f.Resolve(context.Background(), filepath.Join(w.outside, "y.txt"), fs.ResolveOptions{})
		require.NoError(t, err)
		_, err = f.WriteText(context.Background(), tg, "pwned", fs.WriteOptions{Policy: pol})
		t.Logf("root=%q err=%v", root, err)
	}
	assert.Equal(t, before, fixture.Snapshot(t, w.outside))
}
