package execlocal_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execlocal"
)

func TestMain(m *testing.M) {
	if subproc.IsHelper(os.Args) {
		os.Exit(subproc.Main())
	}
	os.Exit(m.Run())
}

func TestRun(t *testing.T) {
	t.Setenv("HARNESS_TEST_SECRET", "s3cret")
	t.Setenv("HARNESS_TEST_PASS", "passed")
	r, err := execlocal.New(exec.Config{Env: []string{"HARNESS_TEST_PASS"}, OutputLimit: 64})
	require.NoError(t, err)
	assert.False(t, r.Confines())
	dir := t.TempDir()

	t.Run("the command writes where it likes and gets the minimal environment", func(t *testing.T) {
		res, err := r.Run(t.Context(), exec.Request{
			Command: `echo "[$HARNESS_TEST_SECRET][$HARNESS_TEST_PASS]" > out; env | cut -d= -f1 | sort | tr '\n' ' '`, Workdir: dir, Timeout: time.Minute,
		})
		require.NoError(t, err)
		assert.EqualValues(t, 0, res.ExitCode)
		b, err := os.ReadFile(filepath.Join(dir, "out"))
		require.NoError(t, err)
		assert.Equal(t, "[][passed]\n", string(b))
		for _, name := range strings.Fields(res.Stdout.Text) {
			assert.Contains(t, append(exec.BaseEnv, "HARNESS_TEST_PASS", "PWD", "OLDPWD", "SHLVL", "_"), name)
		}
	})
	t.Run("output is capped with head and tail kept", func(t *testing.T) {
		res, err := r.Run(t.Context(), exec.Request{Command: `seq 1 1000`, Workdir: dir})
		require.NoError(t, err)
		assert.True(t, res.Stdout.Truncated)
		assert.Equal(t, int64(3893), res.Stdout.Bytes)
		assert.True(t, strings.HasPrefix(res.Stdout.Text, "1\n2\n3\n"))
		assert.True(t, strings.HasSuffix(res.Stdout.Text, "999\n1000\n"))
		assert.Contains(t, res.Stdout.Text, "bytes cut ...]")
	})
	t.Run("a timeout kills the command", func(t *testing.T) {
		start := time.Now()
		res, err := r.Run(t.Context(), exec.Request{Command: `sleep 300`, Workdir: dir, Timeout: 3 * time.Second})
		require.NoError(t, err)
		assert.True(t, res.TimedOut)
		assert.EqualValues(t, -1, res.ExitCode)
		assert.Less(t, time.Since(start), time.Minute)
	})
	for _, bad := range []exec.Request{{Command: " ", Workdir: dir}, {Command: "true", Workdir: "rel"}, {Command: "true", Workdir: dir, Timeout: -1}} {
		_, err := r.Run(t.Context(), bad)
		var ee *exec.Error
		require.True(t, errors.As(err, &ee))
		assert.EqualValues(t, exec.CodeInvalidRequest, ee.Code)
	}
}

func TestModule(t *testing.T) {
	var r exec.Runner
	fxtest.New(t, execlocal.Module, fx.Populate(&r)).RequireStart().RequireStop()
	assert.False(t, r.Confines())
}
