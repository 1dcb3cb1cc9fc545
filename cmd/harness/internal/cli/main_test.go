package cli_test

import (
	"os"
	"testing"

	"github.com/dsh-go/harness/internal/subproc"
)

// TestMain lets the test binary serve as the exec tool's command helper,
// and gives the commands a state directory of their own (the journal's,
// $XDG_STATE_HOME/harness/journal), so no test writes in the user's home.
func TestMain(m *testing.M) {
	if subproc.IsHelper(os.Args) {
		os.Exit(subproc.Main())
	}
	state, err := os.MkdirTemp("", "harness-cli-state-")
	if err != nil {
		panic(err)
	}
	if err := os.Setenv("XDG_STATE_HOME", state); err != nil {
		panic(err)
	}
	code := m.Run()
	_ = os.RemoveAll(state)
	os.Exit(code)
}
