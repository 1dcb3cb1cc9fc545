//go:build !linux

package subproc

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"
)

// errNotLinux is every run's error on a system other than Linux: a
// command is confined with Linux's namespaces (bubblewrap), Landlock and
// seccomp, and the unconfined runner's helper with its subreaper; none
// exists here, so no command runs rather than one unconfined.
var errNotLinux = fmt.Errorf("%w: harness runs commands on Linux only (bubblewrap, Landlock and seccomp confine them); not on %s", errors.ErrUnsupported, runtime.GOOS)

// Probe reports nothing this kernel could enforce.
func Probe() Capabilities { return Capabilities{} }

// MountNamespace reports that no private mount namespace can be made.
func MountNamespace() bool { return false }

// Main is the helper's entry point; there is no helper here.
func Main() int { return 125 }

// Program is an executable opened for execution by descriptor; none is
// opened here.
type Program struct{ path string }

// OpenProgram refuses.
func OpenProgram(path string) (*Program, error) {
	return nil, fmt.Errorf("%s: %w", path, errNotLinux)
}

// Sealed refuses.
func (p *Program) Sealed() (*Program, error) { return nil, errNotLinux }

// SealedProgram refuses.
func SealedProgram(name string, _ []byte) (*Program, error) {
	return nil, fmt.Errorf("%s: %w", name, errNotLinux)
}

// Path is the path the program was opened at.
func (p *Program) Path() string { return p.path }

// Owner refuses.
func (p *Program) Owner() (uid int, othersWrite bool, err error) { return 0, false, errNotLinux }

// Run refuses: no command runs here.
func Run(context.Context, *Program, Spec, time.Duration, int, Watch) (Outcome, error) {
	return Outcome{}, errNotLinux
}

// Input is a running command's input; none is made here.
type Input struct{ terminal bool }

// NewInput refuses.
func NewInput(bool, uint16, uint16) (*Input, error) { return nil, errNotLinux }

// Terminal reports whether the input is a terminal.
func (in *Input) Terminal() bool { return in.terminal }

// Ready refuses.
func (in *Input) Ready(context.Context, time.Duration) error { return errNotLinux }

// Write refuses.
func (in *Input) Write([]byte, time.Duration) (int, error) { return 0, errNotLinux }

// CloseInput refuses.
func (in *Input) CloseInput(time.Duration) error { return errNotLinux }

// Resize refuses.
func (in *Input) Resize(uint16, uint16, time.Duration) error { return errNotLinux }

// Close does nothing.
func (in *Input) Close() {}

// Hidden reports no hidden input.
func (in *Input) Hidden() bool { return false }
