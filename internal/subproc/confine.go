package subproc

import (
	"errors"
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	hlandlock "github.com/dsh-go/harness/internal/landlock"
)

// deviceRights are the rights granted on DevicePaths.
const deviceRights = landlock.AccessFSSet(ll.AccessFSWriteFile | ll.AccessFSTruncate)

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

// resolveUnix is Landlock's right to connect to a pathname Unix socket.
const resolveUnix = landlock.AccessFSSet(ll.AccessFSResolveUnix)

// Probe returns the kernel's capabilities. The Landlock ABI is
// internal/landlock's probe (KernelABI), asked once per process.
func Probe() Capabilities {
	abi := hlandlock.KernelABI()
	return Capabilities{
		LandlockABI: abi, Seccomp: seccomp.Supported(),
		ResolveUnix: hlandlock.Preset(abi).HandledAccessFS&resolveUnix != 0,
	}
}

// ErrNoLandlock says the kernel cannot confine a command's writes.
var ErrNoLandlock = errors.New("landlock is not available on this kernel (needs Linux 5.13+ with Landlock enabled in the LSM list); confined commands are refused")

// ErrNamedSockets says named Unix sockets (Confinement.UnixSocketPaths)
// cannot be told from the others here: the kernel's Landlock cannot scope
// connects (ABI below 9) and no bubblewrap view masks the other sockets.
var ErrNamedSockets = errors.New("named Unix sockets (--unix-socket) need Landlock ABI 9 (which limits connects to them) or the bubblewrap isolation (which masks every other socket); " +
	"neither is here, so the command was not run rather than run able to reach every Unix socket")

// confine restricts the helper, all its threads and everything it starts:
// a Landlock domain that allows writes only beneath c.WritableRoots (and to
// DevicePaths), then a seccomp filter for sockets. Order matters: Landlock
// sets no_new_privs, which an unprivileged seccomp filter needs.
func confine(c Confinement) error {
	caps := Probe()
	if caps.LandlockABI < 1 {
		return ErrNoLandlock
	}
	if !c.UnixSockets && len(c.UnixSocketPaths) > 0 && !caps.ResolveUnix && !c.socketsMasked {
		return ErrNamedSockets
	}
	if err := restrictFS(c, caps.LandlockABI); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if err := filterSyscalls(c); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}

// restrictFS enforces the Landlock domain for ABI version abi: exactly the
// rights this ABI knows (never "best effort", which would run unconfined
// where Landlock is missing). The rights that modify the filesystem are
// internal/landlock's WriteRights, handled and granted only beneath the
// writable roots; reads and execution are not handled, so they stay allowed
// everywhere. From ABI 9, with Unix sockets open, connecting to a pathname
// socket is handled too and granted on the named sockets and, with
// UnixSockets, beneath the writable roots.
func restrictFS(c Confinement, abi int) error {
	known := hlandlock.Preset(abi)
	fsRights := hlandlock.WriteRights(abi)
	var rootsResolve, handledResolve landlock.AccessFSSet
	if known.HandledAccessFS&resolveUnix != 0 && (c.UnixSockets || len(c.UnixSocketPaths) > 0) {
		handledResolve = resolveUnix
		if c.UnixSockets {
			rootsResolve = resolveUnix
		}
	}
	cfg := landlock.Config{HandledAccessFS: fsRights | handledResolve}
	if !c.Network && !c.LoopbackOnly {
		// TCP bind and connect (ABI 4+), on top of the seccomp filter.
		cfg.HandledAccessNet = known.HandledAccessNet
	}
	// Always (ABI 6+): no connecting to abstract Unix sockets and no
	// signals to processes outside the command's domain (the harness
	// itself included); --unix-sockets allow is about pathname sockets.
	cfg.Scoped = known.Scoped
	rules := []landlock.Rule{
		landlock.PathAccess(deviceRights&fsRights, DevicePaths...).IgnoreIfMissing(),
	}
	if len(c.WritableRoots) > 0 {
		// A missing root grants nothing: fail closed.
		rules = append(rules, landlock.PathAccess(fsRights|rootsResolve, c.WritableRoots...).IgnoreIfMissing())
	}
	if handledResolve != 0 && len(c.UnixSocketPaths) > 0 {
		// A named socket gone since it was resolved grants nothing.
		rules = append(rules, landlock.PathAccess(handledResolve, c.UnixSocketPaths...).IgnoreIfMissing())
	}
	return cfg.Restrict(rules...)
}

// filterSyscalls installs the seccomp filter on every thread: with network
// off, socket(2) of every family but AF_UNIX fails with EPERM; with Unix
// sockets off and none named, AF_UNIX too (seccomp cannot read the path a
// connect names, so pathname sockets cannot be told apart: named ones are
// told apart by Landlock or the bubblewrap view); socketpair(2) stays
// allowed (its two ends reach nothing outside). Always: io_uring_setup (its socket and
// connect operations bypass the filter), the mount API (mount, umount2,
// pivot_root, open_tree, move_mount, fsopen, fsconfig, fsmount, fspick,
// mount_setattr), open_by_handle_at and bpf fail with EPERM, so nothing
// reshapes the view the command was given, even with capabilities of a
// namespace of its own.
func filterSyscalls(c Confinement) error {
	// Named sockets need AF_UNIX sockets.
	c.UnixSockets = c.UnixSockets || len(c.UnixSocketPaths) > 0
	groups := []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: []string{
		"io_uring_setup", "mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig",
		"fsmount", "fspick", "mount_setattr", "open_by_handle_at", "bpf",
	}}}
	switch {
	case c.Network && c.UnixSockets:
	case c.LoopbackOnly && !c.Network:
		// The command's network namespace (its own, or its session's)
		// holds only loopback: the namespaced families work inside it;
		// every other family (vsock, which reaches the host of a virtual
		// machine, and the rest) and, unless allowed, AF_UNIX fail with
		// EPERM.
		conds := seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_INET},
			{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_INET6},
			{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_NETLINK},
		}
		if c.UnixSockets {
			conds = append(conds, seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX})
		}
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{{
			Name: "socket", Conditions: conds,
		}}})
	case !c.Network && !c.UnixSockets:
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionErrno, Names: []string{"socket"}})
	case !c.Network:
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{{
			Name: "socket", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}},
		}}})
	default:
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{{
			Name: "socket", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_UNIX}},
		}}})
	}
	return seccomp.LoadFilter(seccomp.Filter{
		NoNewPrivs: true,
		Flag:       seccomp.FilterFlagTSync,
		Policy:     seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups},
	})
}
