//go:build linux

package fsbackend_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/internal/fsbackend"
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

func TestModuleRestart(t *testing.T) {
	dir := realTempDir(t)
	ctx := context.Background()

	t.Run("A-03 L-04 stop, then a second app in the same process works without leftovers", func(t *testing.T) {
		baseline := runtime.NumGoroutine()
		svc1, app1 := startModule(t, fx.Supply(fslocal.Config{Cwd: dir}))
		tg, err := svc1.Resolve(ctx, "a.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		_, err = svc1.WriteText(ctx, tg, "first", fs.WriteOptions{})
		require.NoError(t, err)
		f1, ok := svc1.(*fslocal.FileSystem)
		require.True(t, ok)
		app1.RequireStop()
		assert.Zero(t, fsbackend.LockTableSize(f1), "no lock entry outlives the app")

		svc2, app2 := startModule(t, fx.Supply(fslocal.Config{Cwd: dir}))
		assert.NotSame(t, f1, svc2, "a new app builds a new backend")
		tg2, err := svc2.Resolve(ctx, "a.txt", fs.ResolveOptions{})
		require.NoError(t, err)
		assert.Equal(t, tg, tg2)
		text, err := svc2.ReadText(ctx, tg2)
		require.NoError(t, err)
		assert.Equal(t, "first", text)
		_, err = svc2.WriteText(ctx, tg2, "second", fs.WriteOptions{Intent: fs.ReplaceSeen(fs.Observation{Version: versionOf(t, svc2.(*fslocal.FileSystem), tg2)})})
		require.NoError(t, err)
		assert.Equal(t, "second", readFile(t, filepath.Join(dir, "a.txt")))
		assert.Zero(t, fsbackend.LockTableSize(svc2.(*fslocal.FileSystem)))
		app2.RequireStop()

		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 1, "only the file itself is left in the dir")
		assert.Equal(t, "a.txt", entries[0].Name())

		// Poll in this goroutine: assert.Eventually would add its own.
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); !assert.LessOrEqual(t, n, baseline, "no goroutine outlives the stopped apps") {
			buf := make([]byte, 1<<16)
			t.Logf("goroutines:\n%s", buf[:runtime.Stack(buf, true)])
		}
	})
}
