//go:build linux

package subproc_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/subproc"
)

// sandbox returns the bubblewrap isolation with the test binary as its
// stage, or skips when bwrap is missing.
func sandbox(t testing.TB) subproc.Bwrap {
	t.Helper()
	path, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bubblewrap (bwrap) is not installed; apt-get install bubblewrap")
	}
	exe, err := subproc.OpenProgram(path)
	require.NoError(t, err)
	stage, err := subproc.OpenProgram(self(t))
	require.NoError(t, err)
	return subproc.Bwrap{Exe: exe, Stage: stage}
}

func runBwrap(ctx context.Context, t *testing.T, spec subproc.Spec, timeout time.Duration) (subproc.Outcome, string, string) {
	t.Helper()
	if spec.Env == nil {
		spec.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	}
	out, err := subproc.RunBwrap(ctx, sandbox(t), spec, timeout, 1<<20, nil, subproc.Watch{})
	require.NoError(t, err)
	return out, out.Stdout.String(), out.Stderr.String()
}

func TestBwrapRunsInTheView(t *testing.T) {
	requireLandlock(t)
	ws := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(ws, ".git"), 0o755))
	git, err := os.Lstat(filepath.Join(ws, ".git"))
	require.NoError(t, err)
	st := statOf(t, filepath.Join(ws, ".git"))
	_ = git
	before := time.Now()
	out, stdout, stderr := runBwrap(t.Context(), t, subproc.Spec{
		Command: `echo in $PWD; echo ok > file; echo no > .git/config; echo $?; ls /proc | grep -c '^[0-9]'`,
		Dir:     ws,
		Confine: &subproc.Confinement{
			WritableRoots: []string{ws},
			Protected:     []subproc.Protected{{Path: filepath.Join(ws, ".git"), Dev: st.Dev, Ino: st.Ino}},
		},
	}, 0)
	t.Log(stdout, stderr)
	assert.True(t, out.Status.Started, out.Status.Error)
	assert.Equal(t, 0, out.Status.ExitCode)
	// When the stage said Started, between the call and its return.
	assert.True(t, out.Status.StartedAt.After(before) && out.Status.StartedAt.Before(time.Now()), "started at %v", out.Status.StartedAt)
	b, err := os.ReadFile(filepath.Join(ws, "file"))
	require.NoError(t, err)
	assert.Equal(t, "ok\n", string(b))
	assert.NoFileExists(t, filepath.Join(ws, ".git", "config"))
}

type ident struct{ Dev, Ino uint64 }

func statOf(t *testing.T, p string) ident {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(p, &st))
	return ident{Dev: uint64(st.Dev), Ino: st.Ino} //nolint:unconvert // Dev is uint64 on most arches only
}

// TestBwrapExitStatus: the shell is the sandbox's command, so its exit code
// is the result's; a shell ended by signal N reads 128+N, as a shell
// reports it; a stage that cannot start the command says why.
func TestBwrapExitStatus(t *testing.T) {
	requireLandlock(t)
	ws := t.TempDir()
	for _, c := range []struct {
		command string
		code    int
	}{{"exit 3", 3}, {"true", 0}, {"kill -TERM $$", 128 + 15}, {"echo x >&2; exit 255", 255}} {
		out, _, _ := runBwrap(t.Context(), t, subproc.Spec{Command: c.command, Dir: ws, Confine: &subproc.Confinement{}}, time.Minute)
		assert.True(t, out.Status.Started, c.command)
		assert.Equal(t, c.code, out.Status.ExitCode, c.command)
		assert.Empty(t, out.Status.Signal, c.command)
	}
	out, _, _ := runBwrap(t.Context(), t, subproc.Spec{Command: "true", Dir: filepath.Join(ws, "missing"), Confine: &subproc.Confinement{}}, time.Minute)
	assert.False(t, out.Status.Started)
	assert.Contains(t, out.Status.Error, "cannot enter the workdir")
	assert.True(t, out.Status.StartedAt.IsZero(), "nothing started")
	start := time.Now()
	out, _, _ = runBwrap(t.Context(), t, subproc.Spec{Command: "sleep 100", Dir: ws, Confine: &subproc.Confinement{}}, 500*time.Millisecond)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.True(t, out.Status.Stopped)
	assert.True(t, out.TimedOut)
	assert.Equal(t, "SIGKILL", out.Status.Signal)
}

// TestProbeBwrap: the host's bwrap starts with the namespaces RunBwrap asks
// for, its options read from an arguments file.
func TestProbeBwrap(t *testing.T) {
	require.NoError(t, subproc.ProbeBwrap(sandbox(t).Exe))
}

// TestProbeBwrapOutlivesOtherThreads: a probe's bubblewrap, started with a
// parent-death signal that Linux ties to the thread that started it, is
// not killed when other goroutines end their locked threads meanwhile (the
// runtime ends a thread whose goroutine returns locked to it, as the
// Landlock pool's do, and that thread may be the one that forked); such a
// kill left bubblewrap's pid 1 behind, waiting forever with no parent.
func TestProbeBwrapOutlivesOtherThreads(t *testing.T) {
	exe := sandbox(t).Exe
	for range 40 {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					done := make(chan struct{})
					go func() {
						runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
						close(done)
					}()
					<-done
				}
			}()
		}
		err := subproc.ProbeBwrap(exe)
		close(stop)
		wg.Wait()
		require.NoError(t, err)
	}
}
