// Package exec is the command runner's seam: the Runner interface and its
// small vocabulary (Request, Result, Output, Error, the minimal
// environment). Backends are execlocal (never confines) and execsandbox
// (confines every command by the call's sandbox policy); the model-facing
// tool is toolexec.
package exec

import (
	"context"
	"io"
	"syscall"
	"time"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/sandbox"
)

// Runner runs one shell command.
type Runner interface {
	// Run runs req.Command with `/bin/sh -c` in req.Workdir and returns how
	// it ended. A command that runs and fails is a Result with a non-zero
	// ExitCode, not an error. Errors: *Error (CodeInvalidRequest: an empty
	// command, a relative workdir, a confining runner without a policy;
	// CodeStartFailed: the command could not be started; CodeUnavailable:
	// the policy's mode cannot be enforced here, e.g. Landlock is missing,
	// and the command never runs).
	Run(ctx context.Context, req Request) (Result, error)
	// Confines reports whether the runner enforces the request's policy.
	Confines() bool
}

// Request is one command.
type Request struct {
	// Command is the shell command line, run by `/bin/sh -c`.
	Command string
	// Workdir is the absolute directory the command starts in.
	Workdir string
	// Timeout bounds the command's wall time; 0 means none (the context
	// still applies). When it passes, the whole process tree is killed.
	Timeout time.Duration
	// Policy is the call's sandbox policy; a confining runner requires it,
	// the plain one ignores it.
	Policy *sandbox.ExecutionPolicy
	// Stdout and Stderr, when not nil, also get every write of the
	// command to the stream as it comes, while it runs: the way to watch
	// a running command's output (progress, background commands); Result
	// keeps its capped copy either way. A write must be quick and must
	// not fail: the command's output waits for it.
	Stdout, Stderr io.Writer
	// Signals, when not nil, carries signals for the command while it
	// runs: each is sent to every process of its tree alive then (SIGTERM
	// asks it to end; a command may ignore it). Ending it for good is the
	// context's job: ending it kills the whole tree.
	Signals <-chan syscall.Signal
	// LiftedReads are the canonical absolute paths of the deny-read set
	// the user approved this one command to read under danger-full-access
	// (issue 24: the paths its approval prompt named as a credential
	// read). A directory's path ends in "/" and makes its listing
	// readable, not what its entries hold (issue 35); a file's makes its
	// content readable. A confining runner still masks every other
	// deny-read path: only these become readable to the command; one it
	// cannot make exactly readable (gone, replaced, of the other kind)
	// refuses the command. Set only for an approval given
	// once, never for a session grant; ignored in the other modes.
	LiftedReads []string
	// Input, when not nil, is the command's input while it runs (issue
	// 38): a stdin pipe, or a pseudo-terminal that is its controlling
	// terminal, stdin, stdout and stderr (what it writes there is its
	// Stdout; its Stderr stays empty). nil gives it /dev/null. A runner
	// refuses another Input than internal/subproc's (CodeInvalidRequest).
	Input Input
	// AllowHosts are network hosts the user allowed this command alone to
	// reach through the domain proxy (an approved allow_hosts), besides
	// the configured names and the session's grants; a runner without
	// the proxy (HostGranter) ignores them.
	AllowHosts []string
}

// Input is a running command's standard input (issue 38): a pipe, or a
// pseudo-terminal that is its controlling terminal, stdin, stdout and
// stderr. The runners take internal/subproc's (subproc.NewInput); the
// caller writes it while Run runs and closes it once Run has returned.
type Input interface {
	// Terminal reports whether the command gets a terminal.
	Terminal() bool
	// Ready waits at most wait, and while ctx lasts, for the command to be
	// able to take input (its terminal made once its sandbox started).
	Ready(ctx context.Context, wait time.Duration) error
	// Write sends p (typed on a terminal, control characters included),
	// waiting at most wait for the command to take it; it returns how
	// many bytes it took.
	Write(p []byte, wait time.Duration) (int, error)
	// CloseInput sends the end of input: closes the pipe, or types Ctrl-D.
	CloseInput(wait time.Duration) error
	// Resize sets the terminal's size in character cells.
	Resize(rows, cols uint16, wait time.Duration) error
	// Hidden reports whether the terminal reads a line without echo now
	// (a password prompt).
	Hidden() bool
	// Close ends the input: later writes fail.
	Close()
}

// HostGranter is a Runner whose confined commands reach the network
// through a filtering proxy by name (--allow-domain under network deny),
// so a command may be allowed more hosts (Request.AllowHosts).
type HostGranter interface {
	// GrantsHosts reports whether the proxy is on.
	GrantsHosts() bool
}

// Describer is a Runner that says, before a command of policy runs, how it
// will be confined: the part of Result.Confinement the policy and the
// runner's configuration decide (network, Unix sockets, read-only mounts,
// the user), without what only a run finds (masked and reserved paths,
// refused hosts, disarmed git state). nil when the mode is not confined.
// The exec tool judges a running interactive command's output by it.
type Describer interface {
	Describe(policy sandbox.ExecutionPolicy) *Confinement
}

// Capped is a Runner whose commands each run under a cap of memory and of
// processes (execsandbox's --exec-memory and --exec-pids): what one command
// may take, which a principal's caps in all count (services/toolexec).
type Capped interface {
	// Caps returns one command's memory cap in bytes and process cap; 0
	// for no cap.
	Caps() (memoryBytes, pids int64)
}

// Result is how a command ended.
type Result struct {
	// ExitCode is the shell's exit code; -1 when a signal ended it.
	ExitCode int
	// Signal names the signal that ended the shell ("SIGKILL"), "" when it
	// exited.
	Signal string
	// TimedOut reports that Timeout passed and the tree was killed (or,
	// under a confining runner, that it passed before the command started:
	// nothing ran);
	// Cancelled that the context ended first.
	TimedOut, Cancelled bool
	// Duration is the command's wall time.
	Duration time.Duration
	// Start is the sandbox's own cost of starting the command: from the
	// runner's call to the shell's exec (the view's searches, bubblewrap,
	// the stage's checks and confinement). 0 where the runner does not
	// measure it: runners that do not confine, and every isolation but
	// bubblewrap's.
	Start time.Duration
	// Stdout and Stderr are the command's output, capped.
	Stdout, Stderr Output
	// Confinement is how the sandbox confined the command; nil when it
	// ran unconfined (a runner that does not confine, or
	// danger-full-access).
	Confinement *Confinement
}

// Confinement is what a confined command was refused and as whom it ran:
// what the exec tool needs to tell a failure the sandbox caused (and so
// worth an escalation) from one it would have met anyway.
type Confinement struct {
	// Network reports the command could open network sockets (TCP, UDP,
	// ...) beyond loopback (--network allow); UnixSockets that it could
	// open Unix sockets (--unix-sockets allow).
	Network, UnixSockets bool
	// UnixSocketPaths are the named Unix sockets (--unix-socket,
	// canonical) the command could connect to when UnixSockets is false:
	// those that existed when it started.
	UnixSocketPaths []string
	// OwnUnixSockets reports that, with UnixSockets false, the command
	// could make Unix sockets beneath its writable roots and connect to
	// them, every socket it did not make but the named ones unreachable.
	OwnUnixSockets bool
	// ReadOnlyMounts reports that everything outside the writable roots
	// (and the protected paths inside them) was mounted read-only, so the
	// kernel refused a write there with EROFS ("Read-only file system")
	// before any other check; false means Landlock alone refused it,
	// with EACCES ("Permission denied").
	ReadOnlyMounts bool
	// UID and GIDs are the user and groups the kernel's file permission
	// checks saw (host IDs; GIDs holds the primary group first).
	UID  uint32
	GIDs []uint32
	// Capable reports that the command kept the capabilities that bypass
	// file permissions (a root server under the Landlock isolation).
	Capable bool
	// Masked are the deny-read paths hidden in the command's view
	// (canonical; a directory hides what it holds): reading one failed
	// with EACCES (a file) or ENOENT (beneath a directory).
	Masked []string
	// MaskedByLandlock reports that Masked were hidden by Landlock's read
	// rights (the Landlock isolation), not by masks: reading one failed
	// with EACCES, and a denied directory's names could be listed.
	MaskedByLandlock bool
	// Refused are the connections the domain proxy refused while the
	// command ran, from the proxy's own record (never the command's
	// output), each host once, in order; commands of one session share
	// its proxy listener, so a refusal made for another of its commands
	// running at the same time is listed too. At most MaxRefused hosts
	// are listed; RefusedMore counts the refusals of other hosts past
	// them, one per connection.
	Refused     []RefusedHost
	RefusedMore int
	// Disarmed is the git state that runs programs (sandbox.GitRunStates)
	// the command created or changed in a git directory of the writable
	// roots, found when it ended and disarmed then, so the user's git on
	// the host runs none of it; in path order.
	Disarmed []DisarmedState
	// Reserved are the paths the command could not create, which did not
	// exist when it started (a writable root's top-level .git and
	// host-run files, a git directory's missing read-only members;
	// canonical): each was held by a read-only placeholder while it ran,
	// so making one failed with EEXIST ("File exists") and writing one as
	// a file with EISDIR ("Is a directory"). Bubblewrap isolation only.
	Reserved []string
	// WholeGitDirs are the git directories (canonical) read-only whole in
	// the command's view, where the rest of the workspace's have only
	// their members read-only (--vcs commit): those of the repositories
	// not holding its workdir, when binding each member would have passed
	// bubblewrap's limit on its arguments (a workspace of some 250
	// repositories). A commit in one failed with EROFS.
	WholeGitDirs []string
}

// DisarmedState is one git state file a command left that would make git
// on the host run a program, and what the runner did with it.
type DisarmedState struct {
	// Path is the file's absolute path ("" when the check itself could not
	// finish: Action says why).
	Path string
	// Runs says what git would have run from it ("the rebase todo's exec
	// lines").
	Runs string
	// Found is the line or value that would have run, at most 200 bytes.
	Found string
	// Action is what was done: the lines made comments, the file removed.
	Action string
	// Link marks not git state but an entry the command put in place of a
	// protected symlink (a dotfiles `.bashrc` or `~/.config` link), moved
	// aside when it ended and the link made again.
	Link bool
}

// MaxRefused is how many refused hosts Confinement.Refused lists.
const MaxRefused = 256

// RefusedHost is one host the domain proxy refused: the name (or address)
// asked for, the port (0: its name lookup, refused by the namespace's
// name server), and the proxy's reason.
type RefusedHost struct {
	Host   string
	Port   int
	Reason string
}

// Output is one captured stream.
type Output struct {
	// Text is the stream when it fits the cap, else its head, a line
	// `[... N bytes cut ...]` and its tail.
	Text string
	// Bytes is how many bytes the command wrote to the stream.
	Bytes int64
	// Truncated reports whether Text is cut.
	Truncated bool
}

// DefaultOutputLimit is the default cap, in bytes, on what is kept of each
// of stdout and stderr: half from the head, half from the tail.
const DefaultOutputLimit = 64 << 10

// Code is a machine-readable runner error code: the one code type,
// errcode.Code.
type Code = errcode.Code

// The runner's error codes.
const (
	CodeInvalidRequest Code = "EXEC_INVALID_REQUEST"
	CodeStartFailed    Code = "EXEC_START_FAILED"
	// CodeUnavailable: the call's mode cannot be enforced here (no
	// Landlock); the command never runs (X-19's code).
	CodeUnavailable Code = "SANDBOX_UNAVAILABLE"
)

// Error is a runner error that is not a sandbox refusal.
type Error struct {
	Code    Code
	Message string
	// Cause, when set, is the error Message tells of (errors.Is and As
	// reach it through Unwrap).
	Cause error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns Cause.
func (e *Error) Unwrap() error { return e.Cause }

// Config configures a runner backend. The zero value is valid.
type Config struct {
	// Env names the server variables passed through to commands besides
	// BaseEnv (--exec-env).
	Env []string `yaml:"env" json:"env"`
	// OutputLimit caps, in bytes, what is kept of each of stdout and
	// stderr; 0 means DefaultOutputLimit.
	OutputLimit int `yaml:"outputLimit" json:"outputLimit"`
	// Helper is the path of the binary re-executed as the command helper
	// (the harness binary, whose main dispatches the hidden helper
	// argument first); "" means the small helper embedded in the binary
	// (internal/helperbin, built by `make build`), or the running
	// executable in a build without it.
	Helper string `yaml:"helper" json:"helper"`
}
