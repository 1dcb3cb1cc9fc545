//go:build linux

package subproc_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
)

// seen is a Watch writer that tells when its output contains want.
type seen struct {
	want string
	mu   sync.Mutex
	buf  bytes.Buffer
	hit  chan struct{}
	once sync.Once
}

func (s *seen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	if bytes.Contains(s.buf.Bytes(), []byte(s.want)) {
		s.once.Do(func() { close(s.hit) })
	}
	return len(p), nil
}

// TestWatch: through each runner, a Watch's writers get the command's
// output while it runs (the command waits for a signal after printing),
// and a signal on Watch.Signals reaches the command, whose trap then ends
// it with its own exit code; the capped outcome still has all the output.
func TestWatch(t *testing.T) {
	requireLandlock(t)
	runners := []struct {
		name string
		run  func(ctx context.Context, spec subproc.Spec, w subproc.Watch) (subproc.Outcome, error)
	}{
		{"helper, unconfined", func(ctx context.Context, spec subproc.Spec, w subproc.Watch) (subproc.Outcome, error) {
			return subproc.Run(ctx, helperProgram(t), spec, 0, 1<<20, w)
		}},
		{"helper, Landlock", func(ctx context.Context, spec subproc.Spec, w subproc.Watch) (subproc.Outcome, error) {
			spec.Confine = &subproc.Confinement{WritableRoots: []string{spec.Dir}}
			return subproc.Run(ctx, helperProgram(t), spec, 0, 1<<20, w)
		}},
		{"bubblewrap", func(ctx context.Context, spec subproc.Spec, w subproc.Watch) (subproc.Outcome, error) {
			spec.Confine = &subproc.Confinement{WritableRoots: []string{spec.Dir}}
			return subproc.RunBwrap(ctx, sandbox(t), spec, 0, 1<<20, nil, w)
		}},
	}
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			stdout := &seen{want: "ready\n", hit: make(chan struct{})}
			stderr := &seen{want: "\x00", hit: make(chan struct{})}
			signals := make(chan syscall.Signal)
			type result struct {
				out subproc.Outcome
				err error
			}
			done := make(chan result, 1)
			go func() {
				out, err := r.run(t.Context(), subproc.Spec{
					Command: `trap 'echo term >&2; exit 7' TERM; printf 'ready\n'; while :; do sleep 0.05; done`,
					Dir:     t.TempDir(), Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
				}, subproc.Watch{Stdout: stdout, Stderr: stderr, Signals: signals})
				done <- result{out, err}
			}()
			select {
			case <-stdout.hit:
			case res := <-done:
				t.Fatalf("the command ended before its output was seen: %+v %v", res.out.Status, res.err)
			case <-time.After(30 * time.Second):
				t.Fatal("the watch never saw the output")
			}
			select {
			case signals <- syscall.SIGTERM:
			case <-time.After(30 * time.Second):
				t.Fatal("the runner does not take signals")
			}
			res := <-done
			require.NoError(t, res.err)
			assert.True(t, res.out.Status.Started, res.out.Status.Error)
			assert.False(t, res.out.Status.Stopped, "a signal is not a stop")
			assert.Equal(t, 7, res.out.Status.ExitCode, "the trap ran: %s", res.out.Stderr.String())
			assert.Equal(t, "ready\n", res.out.Stdout.String())
			// The shell may report its sleep's end ("Terminated") first.
			assert.True(t, strings.HasSuffix(res.out.Stderr.String(), "term\n"), res.out.Stderr.String())
			stderr.mu.Lock()
			defer stderr.mu.Unlock()
			assert.Equal(t, res.out.Stderr.String(), stderr.buf.String(), "the watch got stderr too")
		})
	}
}
