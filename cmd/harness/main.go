// Command harness serves fenced filesystem tools to AI agents over MCP
// (harness serve) and runs single tool calls (harness call). See
// `harness help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/cmd/harness/internal/cli"
	"github.com/dsh-go/harness/internal/subproc"
)

// gcPercent is the garbage collector's target when GOGC is not set. The
// server's live heap is about a megabyte, so the default (100) collects every
// few hundred calls and a collection costs more than the calls between them;
// 400 cuts the per-call CPU of a read by about a third (BenchmarkServeCall)
// for a few megabytes of heap.
const gcPercent = 400

func main() {
	if subproc.IsHelper(os.Args) {
		// The command helper: confine, run one command, reap its tree.
		os.Exit(subproc.Main())
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.Env{
		Stdin:           os.Stdin,
		Stdout:          os.Stdout,
		Stderr:          os.Stderr,
		Getenv:          os.Getenv,
		StdinIsTerminal: isTerminal(os.Stdin),
	})
	stop()
	os.Exit(code)
}

// isTerminal reports whether f is an interactive terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), getTermios)
	return err == nil
}
