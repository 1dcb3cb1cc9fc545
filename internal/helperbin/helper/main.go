//go:build harness_helper

// Command helper runs one command for harness, which embeds it (package
// helperbin): it is started only with subproc.HelperArg, as the confined command's
// helper or as the inner stage inside bubblewrap, and runs nothing else.
// It links only internal/subproc and what that needs, so each command
// starts a program of about 4 MB and 50 package initializations instead of
// the whole harness binary (about 40 MB and 280). It builds only with the
// build tag harness_helper, as scripts/build-harness.sh builds it, so that
// `go install ./...` does not install it as a command of its own.
package main

import (
	"fmt"
	"os"

	"github.com/dsh-go/harness/internal/subproc"
)

func main() {
	if subproc.IsHelper(os.Args) {
		os.Exit(subproc.Main())
	}
	fmt.Fprintln(os.Stderr, "this is harness's command helper, which harness starts itself; run harness instead")
	os.Exit(2)
}
