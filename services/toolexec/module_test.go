package toolexec_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolexec"
)

// TestModule: the fx module contributes exec, exec_kill and exec_output
// over the composed runner, and the app's stop kills the background
// commands still running (nothing of them is left).
func TestModule(t *testing.T) {
	requireLandlock(t)
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	var tools tool.Group
	app := fxtest.New(t,
		fx.Supply(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws, TempRoots: []string{}}),
		sandboxpolicy.Module, execsandbox.Module, toolexec.Module,
		fx.Populate(&tools),
	)
	app.RequireStart()
	byName := map[string]*tool.Tool{}
	var names []string
	for _, x := range tool.Sorted(tools.Tools) {
		byName[x.Name] = x
		names = append(names, x.Name)
	}
	require.Equal(t, []string{"exec", "exec_input", "exec_kill", "exec_output"}, names)

	m := marker(50)
	sess := session.New("s", ws)
	raw, err := json.Marshal(map[string]any{"command": "setsid sleep " + m + " & exec sleep " + m, "background": true})
	require.NoError(t, err)
	res := byName["exec"].Handler(session.NewContext(t.Context(), sess), tool.Call{ID: "1", Arguments: raw})
	require.False(t, res.IsError, res.Text)
	require.Eventually(t, func() bool { return len(processesWith("sleep\x00"+m)) == 2 }, bgWait, 20*time.Millisecond)
	app.RequireStop()
	assert.Empty(t, processesWith("sleep\x00"+m), "a background command outlived the app's stop")
}
