package sandboxpolicy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// startModule starts an fxtest app with sandboxpolicy.Module and opts and
// returns the provided service and the started app.
func startModule(t *testing.T, opts ...fx.Option) (*sandboxpolicy.Service, *fxtest.App) {
	t.Helper()
	var svc *sandboxpolicy.Service
	app := fxtest.New(t, append(opts, fx.NopLogger, sandboxpolicy.Module, fx.Populate(&svc))...)
	app.RequireStart()
	require.NotNil(t, svc)
	return svc, app
}

func TestModule(t *testing.T) {
	dir := realTempDir(t)
	ws := mkdir(t, filepath.Join(dir, "ws"))
	tmp := mkdir(t, filepath.Join(dir, "tmp"))

	t.Run("the module provides the service configured by the supplied Config", func(t *testing.T) {
		svc, app := startModule(t, fx.Supply(sandboxpolicy.Config{Mode: ww, WorkspaceRoot: ws, TempRoots: []string{tmp}}))
		defer app.RequireStop()
		assert.Equal(t, ww, svc.Default().Mode)
		assert.Equal(t, stamped(sandbox.ExecutionPolicy{Mode: ww, WorkspaceRoot: ws}, svc), svc.Default())
		assert.Equal(t, []string{ws, tmp}, stamped(svc.Default(), svc).WritableRoots())
	})

	t.Run("P-01 without a supplied Config the module uses the defaults", func(t *testing.T) {
		wd, err := os.Getwd()
		require.NoError(t, err)
		svc, app := startModule(t)
		defer app.RequireStop()
		assert.Equal(t, stamped(sandbox.ExecutionPolicy{Mode: ro, WorkspaceRoot: canonical(t, wd)}, svc), svc.Default())
	})

	t.Run("P-10 stopping the app and starting a second one in the same process leaves nothing behind", func(t *testing.T) {
		first, app1 := startModule(t, fx.Supply(sandboxpolicy.Config{Mode: danger, WorkspaceRoot: ws}))
		s := session.New("s", ws)
		require.NoError(t, sandboxpolicy.SetMode(s, ww))
		assert.Equal(t, ww, first.Resolve(s, sandbox.FileTools, "").Mode)
		app1.RequireStop()

		second, app2 := startModule(t, fx.Supply(sandboxpolicy.Config{Mode: ro, WorkspaceRoot: tmp}))
		defer app2.RequireStop()
		assert.NotSame(t, first, second)
		assert.Equal(t, stamped(sandbox.ExecutionPolicy{Mode: ro, WorkspaceRoot: tmp}, second), second.Default())
		assert.Equal(t, stamped(sandbox.ExecutionPolicy{Mode: ww, WorkspaceRoot: ws, SessionID: "s"}, second), second.Resolve(s, sandbox.FileTools, ""))
	})

	t.Run("P-10 the app starts and stops cleanly", func(t *testing.T) {
		var svc *sandboxpolicy.Service
		fxtest.New(t, fx.NopLogger, sandboxpolicy.Module, fx.Populate(&svc)).RequireStart().RequireStop()
		assert.NotNil(t, svc)
	})
}

func TestModuleRejectsInvalidConfig(t *testing.T) {
	tests := []struct {
		name   string
		cfg    sandboxpolicy.Config
		wantIn string
	}{
		{name: "P-09 an unknown configured mode (yolo) fails the app", cfg: sandboxpolicy.Config{Mode: "yolo"}, wantIn: `"yolo"`},
		{name: "P-09 a relative workspace root fails the app", cfg: sandboxpolicy.Config{WorkspaceRoot: "ws"}, wantIn: "WorkspaceRoot"},
		{name: `P-09 a temp root of "/" fails the app`, cfg: sandboxpolicy.Config{TempRoots: []string{"/"}}, wantIn: "TempRoots"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, newErr := sandboxpolicy.New(tc.cfg)
			require.Error(t, newErr, "New refuses the config too")

			var svc *sandboxpolicy.Service
			app := fx.New(fx.NopLogger, fx.Supply(tc.cfg), sandboxpolicy.Module, fx.Populate(&svc))
			err := app.Err()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantIn)
			assert.Contains(t, err.Error(), newErr.Error())
			assert.Nil(t, svc)
		})
	}
}
