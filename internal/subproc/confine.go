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
}

// Probe returns the kernel's capabilities. The Landlock ABI is
// internal/landlock's probe (KernelABI), asked once per process.
func Probe() Capabilities {
	return Capabilities{LandlockABI: hlandlock.KernelABI(), Seccomp: seccomp.Supported()}
}

// ErrNoLandlock says the kernel cannot confine a command's writes.
var ErrNoLandlock = errors.New("landlock is not available on this kernel (needs Linux 5.13+ with Landlock enabled in the LSM list); confined commands are refused")

// confine restricts the helper, all its threads and everything it starts:
// a Landlock domain that allows writes only beneath c.WritableRoots (and to
// DevicePaths), then a seccomp filter for sockets. Order matters: Landlock
// sets no_new_privs, which an unprivileged seccomp filter needs.
func confine(c Confinement) error {
	caps := Probe()
	if caps.LandlockABI < 1 {
		return ErrNoLandlock
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
// everywhere.
func restrictFS(c Confinement, abi int) error {
	known := hlandlock.Preset(abi)
	fsRights := hlandlock.WriteRights(abi)
	var resolveUnix landlock.AccessFSSet
	if c.UnixSockets && known.HandledAccessFS&landlock.AccessFSSet(ll.AccessFSResolveUnix) != 0 {
		// ABI 9+: connecting to a pathname Unix socket is limited to
		// sockets beneath the writable roots.
		resolveUnix = landlock.AccessFSSet(ll.AccessFSResolveUnix)
	}
	cfg := landlock.Config{HandledAccessFS: fsRights | resolveUnix}
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
		rules = append(rules, landlock.PathAccess(fsRights|resolveUnix, c.WritableRoots...).IgnoreIfMissing())
	}
	return cfg.Restrict(rules...)
}

// filterSyscalls installs the seccomp filter on every thread: with network
// off, socket(2) of every family but AF_UNIX fails with EPERM; with Unix
// sockets off, AF_UNIX too (seccomp cannot read the path a connect names, so
// pathname sockets cannot be told apart); socketpair(2) stays allowed (its
// two ends reach nothing outside). Always: io_uring_setup (its socket and
// connect operations bypass the filter), the mount API (mount, umount2,
// pivot_root, open_tree, move_mount, fsopen, fsconfig, fsmount, fspick,
// mount_setattr), open_by_handle_at and bpf fail with EPERM, so nothing
// reshapes the view the command was given, even with capabilities of a
// namespace of its own.
func filterSyscalls(c Confinement) error {
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
