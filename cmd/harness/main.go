// Command harness serves fenced filesystem tools to AI agents over MCP
// (harness serve) and runs single tool calls (harness call). See
// `harness help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/cli"
)

func main() {
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
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
