package toolexec_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolexec"
)

// startingForever is a runner whose command stays starting (its input never
// gets a terminal) until it is cancelled.
type startingForever struct{}

func (startingForever) Run(ctx context.Context, _ exec.Request) (exec.Result, error) {
	<-ctx.Done()
	return exec.Result{ExitCode: -1, Cancelled: true}, nil
}

func (startingForever) Confines() bool { return true }

// TestInputToAStartingCommandHonoursCancel: exec_input waits for a command
// still starting to take input (up to 30 s), but a client that cancels the
// call has it back at once, with nothing sent.
func TestInputToAStartingCommandHonoursCancel(t *testing.T) {
	w := newWorld(t, sandbox.WorkspaceWrite)
	tl, err := toolexec.New(toolexec.Config{}, toolexec.Deps{Runner: startingForever{}, Policy: w.pol})
	require.NoError(t, err)
	defer tl.Close(context.Background()) //nolint:errcheck // the test's own
	tools := map[string]*tool.Tool{}
	for _, x := range tl.All() {
		tools[x.Name] = x
	}
	res := call(t, tools["exec"], w.sess, map[string]any{"command": "cat", "interactive": true, "tty": true, "wait_ms": 0})
	require.False(t, res.IsError, res.Text)
	id := res.Value.(toolexec.Output).ID

	ctx, cancel := context.WithTimeout(session.NewContext(t.Context(), w.sess), 200*time.Millisecond)
	defer cancel()
	done := make(chan tool.Result, 1)
	go func() {
		done <- tools["exec_input"].Handler(ctx, tool.Call{ID: "in", Arguments: []byte(`{"id":"` + id + `","input":"hi\n","wait_ms":0}`)})
	}()
	select {
	case r := <-done:
		assert.True(t, r.IsError)
		assert.Contains(t, r.Text, "the input was not sent")
	case <-time.After(20 * time.Second):
		t.Fatal("exec_input went on waiting after its call was cancelled")
	}
}
