package fslocal_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
)

// startModule starts an fx test app with fslocal.Module and opts and returns
// the provided service and the app (started).
func startModule(t *testing.T, opts ...fx.Option) (fs.Service, *fxtest.App) {
	t.Helper()
	var svc fs.Service
	app := fxtest.New(t, append(opts, fslocal.Module, fx.Populate(&svc))...)
	app.RequireStart()
	require.NotNil(t, svc)
	return svc, app
}

func TestModuleProvidesService(t *testing.T) {
	dir := realTempDir(t)
	svc, app := startModule(t, fx.Supply(fslocal.Config{Cwd: dir}))
	defer app.RequireStop()
	ctx := context.Background()

	t.Run("the module provides a working fs.Service configured by the supplied Config", func(t *testing.T) {
		tg, err := svc.Resolve(ctx, "hello.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(dir, "hello.txt"), tg.DisplayPath)
		out, err := svc.WriteText(ctx, tg, "hi\n", fs.WriteOptions{})
		require.NoError(t, err)
		assert.Equal(t, fs.OpCreate, out.Operation)
		assert.Equal(t, "hi\n", readFile(t, filepath.Join(dir, "hello.txt")))
		text, err := svc.ReadText(ctx, tg)
		require.NoError(t, err)
		assert.Equal(t, "hi\n", text)
	})

	t.Run("the provided service is the local backend", func(t *testing.T) {
		f, ok := svc.(*fslocal.FileSystem)
		require.True(t, ok, "got %T", svc)
		assert.Equal(t, dir, f.Config().Cwd)
		assert.Equal(t, int64(fslocal.DefaultDiffBasisMaxBytes), f.Config().DiffBasisMaxBytes)
	})

	t.Run("A-01 SandboxMode of the bare backend is unset and non-confining", func(t *testing.T) {
		mode, confining := svc.SandboxMode()
		assert.Empty(t, mode)
		assert.False(t, confining)
	})
}

func TestModuleDefaults(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)

	t.Run("L-01 without a supplied Config the module uses the defaults", func(t *testing.T) {
		svc, app := startModule(t)
		defer app.RequireStop()
		f, ok := svc.(*fslocal.FileSystem)
		require.True(t, ok, "got %T", svc)
		assert.Equal(t, filepath.Clean(wd), f.Config().Cwd)
		assert.Equal(t, int64(10485760), f.Config().DiffBasisMaxBytes)
	})

	t.Run("a supplied logger is accepted", func(t *testing.T) {
		svc, app := startModule(t, fx.Supply(zap.NewNop()))
		defer app.RequireStop()
		assert.NotNil(t, svc)
	})
}

func TestModuleDuplicateService(t *testing.T) {
	cases := []struct {
		name string
		opts []fx.Option
	}{
		{"A-02 the module twice is a duplicate fs.Service", []fx.Option{fslocal.Module, fslocal.Module}},
		{"A-02 the module plus another fs.Service provider is a duplicate", []fx.Option{
			fslocal.Module,
			fx.Provide(func() (fs.Service, error) { return fslocal.New(fslocal.Config{Cwd: "/"}, nil) }),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var svc fs.Service
			app := fx.New(append(tc.opts, fx.NopLogger, fx.Populate(&svc))...)
			require.Error(t, app.Err())
			assert.Contains(t, app.Err().Error(), "fs.Service")
			assert.Nil(t, svc)
		})
	}
}

func TestModuleInvalidConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  fslocal.Config
		want string
	}{
		{"L-03 a negative DiffBasisMaxBytes fails the app with a clear message", fslocal.Config{Cwd: "/", DiffBasisMaxBytes: -1}, "DiffBasisMaxBytes"},
		{"L-03 a DiffBasisMaxBytes above the maximum fails the app", fslocal.Config{Cwd: "/", DiffBasisMaxBytes: fslocal.MaxDiffBasisBytes + 1}, "DiffBasisMaxBytes"},
		{"L-01 a relative Cwd fails the app", fslocal.Config{Cwd: "rel"}, "Cwd must be an absolute path"},
	}
	for _, tc := range cases {
		t.Run(tc.name+" (with a consumer)", func(t *testing.T) {
			var svc fs.Service
			app := fx.New(fx.NopLogger, fx.Supply(tc.cfg), fslocal.Module, fx.Populate(&svc))
			require.Error(t, app.Err())
			assert.Contains(t, app.Err().Error(), tc.want)
			err := app.Start(context.Background())
			require.Error(t, err, "the app must not start")
			assert.Contains(t, err.Error(), tc.want)
			assert.Nil(t, svc)
		})
		t.Run(tc.name+" (even when nothing consumes fs.Service yet)", func(t *testing.T) {
			// L-03: loading the module with a bad config fails. An fx
			// provider runs only on demand, so the module must validate
			// its Config eagerly (e.g. with an fx.Invoke) for this to hold.
			app := fx.New(fx.NopLogger, fx.Supply(tc.cfg), fslocal.Module)
			err := app.Err()
			if err == nil {
				err = app.Start(context.Background())
				defer func() { _ = app.Stop(context.Background()) }()
			}
			require.Error(t, err, "an invalid Config must fail the app at New or Start")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
