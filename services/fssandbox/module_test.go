//go:build linux

package fssandbox_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

func TestModule(t *testing.T) {
	w := newWorld(t)
	start := func(t *testing.T) fs.Service {
		var svc fs.Service
		app := fxtest.New(t,
			fx.Supply(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: w.ws, TempRoots: []string{}}),
			fx.Supply(fslocal.Config{Cwd: w.ws}),
			sandboxpolicy.Module,
			fssandbox.Module,
			fx.Populate(&svc),
		)
		app.RequireStart()
		t.Cleanup(app.RequireStop)
		return svc
	}
	t.Run("S-19 provides a confining fs.Service", func(t *testing.T) {
		svc := start(t)
		_, ok := svc.(*fssandbox.FileSystem)
		assert.True(t, ok)
		mode, confines := svc.SandboxMode()
		assert.True(t, confines)
		assert.Equal(t, sandbox.WorkspaceWrite, mode)
		tg, err := svc.Resolve(context.Background(), "a.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		_, err = svc.WriteText(context.Background(), tg, "x", fs.WriteOptions{})
		require.NoError(t, err)
		assert.FileExists(t, filepath.Join(w.ws, "a.txt"))
	})
	t.Run("S-19 re-mount works after stop", func(t *testing.T) {
		svc := start(t)
		tg, err := svc.Resolve(context.Background(), "b.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		_, err = svc.WriteText(context.Background(), tg, "x", fs.WriteOptions{})
		require.NoError(t, err)
	})
	t.Run("mounting beside fslocal is a duplicate fs.Service", func(t *testing.T) {
		app := fx.New(
			fx.NopLogger,
			fx.Supply(sandboxpolicy.Config{WorkspaceRoot: w.ws}),
			sandboxpolicy.Module, fssandbox.Module, fslocal.Module,
		)
		assert.Error(t, app.Err())
	})
	t.Run("without a policy service the app fails", func(t *testing.T) {
		app := fx.New(fx.NopLogger, fssandbox.Module)
		assert.Error(t, app.Err())
	})
	t.Run("an invalid policy fails the app with the allowed values", func(t *testing.T) {
		app := fx.New(fx.NopLogger, fx.Supply(sandboxpolicy.Config{Mode: "yolo"}), sandboxpolicy.Module, fssandbox.Module)
		require.Error(t, app.Err())
		assert.Contains(t, app.Err().Error(), "read-only, workspace-write, danger-full-access")
	})
}
