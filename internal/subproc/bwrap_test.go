package subproc_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/subproc"
)

// sandbox returns the bubblewrap isolation with the test binary as its
// stage, or skips when bwrap is missing.
func sandbox(t *testing.T) subproc.Bwrap {
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
	out, err := subproc.RunBwrap(ctx, sandbox(t), spec, timeout, 1<<20, nil)
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
