// Package subproc runs one shell command as a process tree owned by a helper
// process: the small helper harness embeds (internal/helperbin), or the
// harness binary itself, started with the hidden argument HelperArg. The helper makes itself a child subreaper and starts the
// command: unconfined, `/bin/sh -c COMMAND` directly; confined, a second
// stage (the binary again, in a private mount namespace when it has
// Confinement.ReadOnlyPaths and the kernel allows one) that restricts itself
// (read-only bind mounts, Landlock, seccomp) and then execs the shell, so the helper stays outside the command's Landlock domain
// and can signal all of it. On the command's end, its timeout or its
// cancellation the helper kills every descendant, including those that
// called setsid. It is mechanics: which paths are writable is decided
// by the caller (services/execsandbox) and handed over in a Confinement.
//
// Every confined stage also joins a new anonymous session keyring and
// installs seccomp filters that refuse the kernel's key calls, any call that
// would set a set-user-ID or set-group-ID bit, openat2 (ENOSYS) and every
// call of another ABI than the native one (ENOSYS); see confine. It does
// not keep a writable root's own mode, owner and times: a command that owns
// the root may change them, and the caller (services/execsandbox) puts them
// back.
//
// The bubblewrap isolation reserves missing protected names with
// placeholders (Reserve, ReleaseAll); a janitor (StartJanitor, the helper
// in a session of its own) removes those a server that died held, once
// that server's sandboxes have ended.
//
// What it does not protect: a descendant that escapes the subreaper's
// descendant scan by exiting its parent and being reparented between two
// scans is found by the next scan, but a process that keeps forking faster
// than the scan kills is only bounded by the scan's round limit
// (maxKillRounds); a cgroup would close that gap. If the helper itself is
// killed with SIGKILL (the parent's last resort after killGrace), its
// descendants are reparented to the nearest subreaper above it and survive.
package subproc

import "time"

// HelperArg is the hidden first argument that turns the embedded helper
// (internal/helperbin/helper), the harness binary or a test binary whose
// TestMain calls Main into the helper.
const HelperArg = "__exec-confined"

// Limits of a run.
const (
	// killGrace is how long the parent waits for the helper to kill its
	// descendants and report after asking it to stop, before it kills the
	// helper itself.
	killGrace = 5 * time.Second
	// maxKillRounds bounds the helper's scan-and-kill loop: each round
	// kills every live descendant found in /proc; a tree that still has
	// members after this many rounds is reported in the status.
	maxKillRounds = 100
	// killRoundPause lets the reaper collect the killed before the next
	// scan.
	killRoundPause = 2 * time.Millisecond
)

// Spec is what the helper runs: Command by `/bin/sh -c` in Dir (absolute)
// with exactly Env, confined by Confine when it is not nil.
type Spec struct {
	Command string       `json:"command"`
	Dir     string       `json:"dir"`
	Env     []string     `json:"env"`
	Confine *Confinement `json:"confine,omitempty"`
	// Terminal, when set, gives the command a pseudo-terminal of this size
	// as its controlling terminal, stdin, stdout and stderr (Input); set
	// by Run and RunBwrap from Watch.Input, never by their caller.
	Terminal *Winsize `json:"terminal,omitempty"`
}

// Confinement is what a confined command may do. Every field narrows; the
// zero value allows writes nowhere (except DevicePaths), no network and no
// Unix sockets.
type Confinement struct {
	// WritableRoots are the directories beneath which the command may
	// create, modify, rename and remove files (canonical absolute paths).
	// A root missing at run time grants nothing.
	WritableRoots []string `json:"writableRoots"`
	// Network permits new sockets of every family other than AF_UNIX.
	Network bool `json:"network"`
	// LoopbackOnly says the command has a network namespace with loopback
	// only, its own or one it shares (the bubblewrap isolation without
	// Network, Bwrap.Net): the
	// namespaced families (inet, inet6, netlink) are permitted inside it,
	// every other family is refused.
	LoopbackOnly bool `json:"loopbackOnly,omitempty"`
	// UnixSockets permits new AF_UNIX sockets (and so connecting to any
	// pathname Unix socket the process can reach, unless Landlock ABI 9
	// limits them to WritableRoots).
	UnixSockets bool `json:"unixSockets"`
	// UnixSocketPaths are the named Unix sockets (--unix-socket: canonical
	// absolute paths of socket files) a command may connect to when
	// UnixSockets is false: AF_UNIX sockets are permitted; where Landlock
	// scopes connects (ABI 9+, Capabilities.ResolveUnix) connecting to a
	// pathname socket is granted on exactly these (and, with UnixSockets,
	// beneath WritableRoots); below it the bubblewrap isolation masks
	// every other bound socket (MaskedSockets) and binds each of these
	// read-only at its own path, and the Landlock isolation refuses the
	// command (ErrNamedSockets). A path missing at run time grants nothing.
	UnixSocketPaths []string `json:"unixSocketPaths,omitempty"`
	// OwnUnixSockets permits new AF_UNIX sockets when UnixSockets is false
	// (--unix-sockets deny, issue 36), for the sockets the command binds
	// beneath WritableRoots and connects to (a test suite's server, an
	// asyncio or gRPC `unix:` endpoint), with every socket it did not make
	// unreachable but UnixSocketPaths: where Landlock scopes connects
	// (ABI 9+), connecting is granted beneath WritableRoots and on
	// UnixSocketPaths only; below it the bubblewrap isolation masks every
	// other bound socket (MaskedSockets), and elsewhere the command is
	// refused (errOwnSockets).
	OwnUnixSockets bool `json:"ownUnixSockets,omitempty"`
	// SocketSources maps a named socket's path (one of UnixSocketPaths)
	// to the socket the bubblewrap isolation binds there when it is not
	// the path itself (--gpg-agent: gpg-agent's restricted socket bound
	// at the agent's usual socket path).
	SocketSources map[string]string `json:"socketSources,omitempty"`
	// Exposed are files (canonical absolute paths) beneath a masked
	// directory (Masked, Dir) that the bubblewrap isolation binds
	// read-only onto themselves inside its mask, so they alone of it are
	// readable (--gpg-agent: the GnuPG home's public keyring). Each is a
	// mount of the file found at start: the host replacing or removing it
	// later does not uncover the directory. One missing at run time is
	// skipped.
	Exposed []string `json:"exposed,omitempty"`
	// MaskedSockets are the pathname Unix sockets (canonical absolute
	// paths) the bubblewrap isolation hides: /dev/null is bound read-only
	// over each, so a connect there is refused (ECONNREFUSED). Those at or
	// beneath /dev, /proc or a reserved directory are left out (the
	// view's own mounts already hide them).
	MaskedSockets []string `json:"maskedSockets,omitempty"`
	// socketsMasked is set by the bubblewrap stage, whose view carries
	// MaskedSockets: only there may UnixSocketPaths be enforced without
	// Landlock's scoping of connects.
	socketsMasked bool
	// ReadOnlyPaths are existing paths beneath WritableRoots (canonical
	// absolute paths: the protected paths found there) that stay
	// read-only: the confining stage runs in a private mount namespace and
	// bind-mounts each onto itself read-only before Landlock. Where the
	// kernel refuses the namespace (MountNamespace false), they are not
	// carved out and only Landlock's writable roots apply.
	ReadOnlyPaths []string `json:"readOnlyPaths,omitempty"`
	// Protected are the protected paths that exist beneath WritableRoots,
	// with their identity at discovery. The bubblewrap isolation binds each
	// read-only in the command's view, and its inner stage checks, before
	// anything runs, that each path is still that file and is read-only
	// there, or is missing with its Holder (fail closed).
	Protected []Protected `json:"protected,omitempty"`
	// Reserved are paths missing when the command was prepared (the
	// top-level `.git` and host-run files of a workspace root, a git
	// directory's missing read-only members) whose placeholder Reserve
	// made: the bubblewrap isolation masks a directory with an empty
	// read-only tmpfs (one with a Holder: binds the empty placeholder
	// read-only onto itself, as it does a file), so the command can neither
	// create nor replace them; the placeholder is removed after the command
	// (ReleaseAll). The stage checks each is there, read-only, or
	// missing with its Holder.
	Reserved []Reserved `json:"reserved,omitempty"`
	// Held are the holders (Protected.Holder, Reserved.Holder) the caller
	// held open just after the search that found them (Hold): the inner
	// stage accepts a path missing with its holder only when that holder
	// is gone (no link left), not moved elsewhere. Nil: none is held, and
	// every missing path is a change.
	Held *Held `json:"-"`
	// HolderFDs is set by RunBwrap, never by its caller: the inner stage's
	// descriptor of each of Held, by its path.
	HolderFDs map[string]int `json:"holderFDs,omitempty"`
	// Limits are the resource caps the inner stage applies as rlimits
	// (where no cgroup carries them).
	Limits RLimits `json:"limits"`
	// ReadDenied are the deny-read paths (canonical absolute paths, none
	// at or beneath a writable root nor holding one) the Landlock
	// isolation hides from the command: its Landlock domain then handles
	// reads too, granting listing beneath `/` and reading and executing
	// beneath every entry of each directory that holds one of them or an
	// ancestor of one, but that path or ancestor itself (addReadRules), so
	// their contents cannot be read. The bubblewrap isolation masks
	// instead (Masked).
	ReadDenied []string `json:"readDenied,omitempty"`
	// Masked are the deny-read paths the bubblewrap isolation hides from
	// the command (see Masked), bound after every other path; its inner
	// stage checks each is masked before anything runs (fail closed).
	Masked []Masked `json:"masked,omitempty"`
	// Pinned is set by RunBwrap, never by its caller: the directories
	// strictly between each masked path and the deepest writable root
	// holding it (every ancestor up to `/` under FullAccess) with their
	// identity (lstat) just before bwrap starts. The view binds each onto
	// itself, as writable as it already is, before the masks, so a
	// command cannot rename it (the kernel refuses renaming a mount point:
	// EBUSY) and carry a masked path out from under its mask; the inner
	// stage checks, before anything runs, that each is a mount root
	// reached without a symlink and still that directory (fail closed).
	Pinned []Protected `json:"pinned,omitempty"`
	// PrivateMounts is set by the helper, never by its caller: the
	// Landlock isolation's confining stage runs in a mount namespace of
	// its own (MountNamespace), where it carves out ReadOnlyPaths and
	// hides the host's terminals (an empty read-only tmpfs on /dev/pts),
	// so no command reads or drives the user's terminals by path.
	PrivateMounts bool `json:"privateMounts,omitempty"`
	// EtcFiles are files of the command's own that the bubblewrap
	// isolation binds read-only (mode 0644), after the masks, over the
	// host's file of the same path, at that file's canonical path; one
	// the host has no regular file for is left out (the read-only root
	// cannot take a new file). Exec's direct hosts (issue 36): its
	// /etc/hosts and /etc/resolv.conf, so the names a command reaches
	// without a proxy resolve in its own namespace.
	EtcFiles []EtcFile `json:"-"`
	// etcBound is set by RunBwrap: where each of EtcFiles is bound, in
	// order ("" for one left out).
	etcBound []string
	// FullAccess gives the bubblewrap isolation's command the whole
	// filesystem read-write (danger-full-access with deny-read): `/` is
	// bound read-write rather than read-only; WritableRoots is then ["/"]
	// for Landlock. /dev and /proc are still fresh, and Masked still
	// apply.
	FullAccess bool `json:"fullAccess,omitempty"`
}

// EtcFile is one of Confinement.EtcFiles: the host's path it stands over
// (such as /etc/hosts) and its content.
type EtcFile struct {
	Path    string
	Content string
}

// Reserved is one reserved path: Dir tells a directory placeholder from a
// file one, FIFO a named pipe one (Reservation.FIFO); Holder is as
// Protected's.
type Reserved struct {
	Path   string `json:"path"`
	Dir    bool   `json:"dir,omitempty"`
	FIFO   bool   `json:"fifo,omitempty"`
	Holder string `json:"holder,omitempty"`
}

// Protected is one protected path and its identity (lstat) when found.
type Protected struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
	// Holder, when set, is what Path is protected (or reserved) for: Path
	// itself, or the git directory it is a member of; one at whose path,
	// once it is gone, the caller would protect and reserve nothing (any
	// but a workspace root's top-level `.git` and host-run files: a command
	// may make a repository anywhere it writes). A Protected or Reserved
	// path missing from the view is accepted when its Holder is missing
	// too and was removed, not moved (Confinement.Held): a process outside
	// removed both after the search (a test suite's scratch repository in
	// the temp area), and the view is what a new search would make. ""
	// (a workspace root's `.git` and what it holds): a missing one is a
	// change.
	Holder string `json:"holder,omitempty"`
	// GitDir, when set, is the git directory Path lies in and GitDirDev,
	// GitDirIno its identity when the search found it: a file renamed
	// over Path since (the host's git rewriting its config) is accepted,
	// bound read-only as it is, while that directory is still the one
	// found; elsewhere only the file found is (the stage's checkView).
	GitDir    string `json:"git_dir,omitempty"`
	GitDirDev uint64 `json:"git_dir_dev,omitempty"`
	GitDirIno uint64 `json:"git_dir_ino,omitempty"`
}

// RLimits are per-process resource limits set by the inner stage before it
// starts the shell; 0 leaves a limit as inherited.
type RLimits struct {
	// Data caps each process's data segment and private writable
	// mappings (RLIMIT_DATA), in bytes.
	Data uint64 `json:"data,omitempty"`
	// Procs caps the processes of the command's user in its own user
	// namespace (RLIMIT_NPROC): its whole tree, since each command gets a
	// fresh namespace. The kernel never applies it to uid 0.
	Procs uint64 `json:"procs,omitempty"`
}

// DevicePaths are the character devices a confined command may always
// write, in every mode: discarding output and terminal I/O are not writes to
// the filesystem.
var DevicePaths = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/random", "/dev/urandom"}

// Status is how the command ended, as the helper reports it.
type Status struct {
	// Started reports whether `/bin/sh` was started; false means Error
	// says why not (a confinement that could not be applied, a missing
	// workdir, or, with Stopped, a stop that came first).
	Started bool `json:"started"`
	// ExitCode is the shell's exit code; -1 when it was killed by a signal.
	ExitCode int `json:"exitCode"`
	// Signal names the signal that ended the shell ("SIGKILL"), "" when it
	// exited.
	Signal string `json:"signal,omitempty"`
	// Stopped reports that the helper was asked to stop (timeout or
	// cancellation) and killed the tree.
	Stopped bool `json:"stopped,omitempty"`
	// Survivors counts descendants still alive after maxKillRounds.
	Survivors int `json:"survivors,omitempty"`
	// Error says why the command did not start.
	Error string `json:"error,omitempty"`
	// Changed, with Error, says the command did not start because a path
	// of its view was not what the caller found when it prepared the
	// confinement: a protected or reserved path not the file found or not
	// on its read-only mount (a process outside renamed another file over
	// it, which takes that mount off it in every other mount namespace),
	// a deny-read path not its mask or a pinned directory not the one
	// pinned, or a path of the view that bubblewrap found gone while it
	// made the view (RunBwrap). Nothing of the command ran; the caller
	// searches again and starts it anew. Error names the path.
	Changed bool `json:"changed,omitempty"`
	// StartedAt is when the runner heard the stage say Started, just
	// before it execs the shell (RunBwrap only; zero otherwise, and when
	// nothing started). Never sent: the runner sets it.
	StartedAt time.Time `json:"-"`
}

// IsHelper reports whether args (os.Args) ask for the helper.
func IsHelper(args []string) bool {
	return len(args) > 1 && args[1] == HelperArg
}

// Winsize is a terminal's size in character cells.
type Winsize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// Masked is one path the deny-read set names (issue 24) that the bubblewrap
// isolation hides from a command: a directory behind an empty read-only
// tmpfs of mode 0555 (it lists as empty, nothing can be made in it), any
// other entry behind an empty read-only file of mode 0000 (reading it fails
// with EACCES for a command without capabilities; its size is 0).
type Masked struct {
	// Path is the canonical absolute path masked.
	Path string `json:"path"`
	// Dir tells a directory from a file.
	Dir bool `json:"dir,omitempty"`
	// Private makes a directory's tmpfs mode 0700 instead of 0555: the
	// socket directories of a program that refuses one others may search
	// (GnuPG's /run/user/UID/gnupg, --gpg-agent: with 0555 gpg looks for
	// its agent in its home instead, and fails).
	Private bool `json:"private,omitempty"`
}

// Capabilities is what this kernel lets the helper enforce.
type Capabilities struct {
	// LandlockABI is the kernel's Landlock ABI version; 0 means Landlock
	// is missing (disabled, or a kernel older than 5.13) and confined
	// commands are refused.
	LandlockABI int `json:"landlockABI"`
	// Seccomp reports whether seccomp filters can be installed, which the
	// network and Unix-socket restrictions need.
	Seccomp bool `json:"seccomp"`
	// ResolveUnix reports whether Landlock can limit which pathname Unix
	// sockets a command connects to (ABI 9+, LANDLOCK_ACCESS_FS_RESOLVE_UNIX).
	ResolveUnix bool `json:"resolveUnix"`
}

// Outcome is a finished run as the parent sees it.
type Outcome struct {
	Status Status
	// Duration is the wall time from starting the helper to its exit.
	Duration time.Duration
	// TimedOut reports that the timeout stopped the command; Cancelled
	// that the caller's context did.
	TimedOut, Cancelled bool
	// Stdout and Stderr hold the command's output, capped.
	Stdout, Stderr *Capture
}
