package cli_test

import (
	"os"
	"testing"

	"github.com/dsh-go/harness/internal/subproc"
)

// TestMain lets the test binary serve as the exec tool's command helper.
func TestMain(m *testing.M) {
	if subproc.IsHelper(os.Args) {
		os.Exit(subproc.Main())
	}
	os.Exit(m.Run())
}
