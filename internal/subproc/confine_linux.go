package subproc

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	hlandlock "github.com/dsh-go/harness/internal/landlock"
)

// deviceRights are the rights granted on DevicePaths.
const deviceRights = landlock.AccessFSSet(ll.AccessFSWriteFile | ll.AccessFSTruncate)

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

// errOwnSockets says a command's own Unix sockets (Confinement.OwnUnixSockets)
// cannot be told from the others here.
var errOwnSockets = errors.New("a command's own Unix sockets need Landlock ABI 9 (which limits connects to the writable roots) or the bubblewrap isolation (which masks every other socket); " +
	"neither is here, so the command was not run rather than run able to reach every Unix socket")

// confine restricts the helper, all its threads and everything it starts:
// a session keyring of its own (ownKeyring), a Landlock domain that allows
// writes only beneath c.WritableRoots (and to DevicePaths), then the seccomp
// filters (nativeOnly, filterSyscalls). Order matters: Landlock sets
// no_new_privs, which an unprivileged seccomp filter needs, and the keyring
// is joined before keyctl is refused. The calling goroutine stays on its
// thread from here on: the keyring is the thread's, and the exec that
// follows must come from that thread.
func confine(c Confinement) error {
	caps := Probe()
	if caps.LandlockABI < 1 {
		return ErrNoLandlock
	}
	if !c.UnixSockets && len(c.UnixSocketPaths) > 0 && !caps.ResolveUnix && !c.socketsMasked {
		return ErrNamedSockets
	}
	if !c.UnixSockets && c.OwnUnixSockets && !caps.ResolveUnix && !c.socketsMasked {
		return errOwnSockets
	}
	runtime.LockOSThread()
	if err := ownKeyring(); err != nil {
		return err
	}
	if err := restrictFS(c, caps.LandlockABI); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if err := filterSyscalls(c); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	if err := nativeOnly(); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}

// ownKeyring makes the calling thread join a new anonymous session keyring,
// so the command inherits none of the server's (the kernel uses a
// possessed keyring's keys for the process: payloads, kAFS and NFS
// tokens). A kernel without keys (ENOSYS) has none to inherit. Errors: the
// kernel refused a new keyring (the user's key quota is full,
// /proc/sys/kernel/keys/maxkeys).
func ownKeyring() error {
	// A NULL name: an anonymous keyring no other process can join by name.
	_, err := unix.KeyctlInt(unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0, 0, 0)
	if err != nil && !errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("cannot give the command a session keyring of its own (the user's key quota, /proc/sys/kernel/keys/maxkeys, may be full): %w", err)
	}
	return nil
}

// specialBits are the set-user-ID and set-group-ID mode bits.
const specialBits = unix.S_ISUID | unix.S_ISGID

// creating are the open flags under which open's mode argument is used:
// O_CREAT, and O_TMPFILE's own bit (O_TMPFILE includes O_DIRECTORY, which
// alone ignores the mode).
const creating = unix.O_CREAT | (unix.O_TMPFILE &^ unix.O_DIRECTORY)

// specialModeRules are the native calls that would give a file a special
// bit (specialBits in their mode argument): chmod, fchmod, fchmodat,
// fchmodat2, creat, mknod, mknodat, and open and openat when creating.
// Calls a native ABI lacks (arm64 has no chmod) are left out. mkdir(2)
// ignores both bits; openat2 is refused whole (its mode is in a structure
// seccomp cannot read); file capabilities need CAP_SETFCAP, which no
// command has.
func specialModeRules(names map[string]int) []seccomp.NameWithConditions {
	bits := func(arg uint32) seccomp.Condition {
		return seccomp.Condition{Argument: arg, Operation: seccomp.BitsSet, Value: specialBits}
	}
	flags := func(arg uint32) seccomp.Condition {
		return seccomp.Condition{Argument: arg, Operation: seccomp.BitsSet, Value: creating}
	}
	var out []seccomp.NameWithConditions
	for _, r := range []seccomp.NameWithConditions{
		{Name: "chmod", Conditions: seccomp.ArgumentConditions{bits(1)}},
		{Name: "fchmod", Conditions: seccomp.ArgumentConditions{bits(1)}},
		{Name: "fchmodat", Conditions: seccomp.ArgumentConditions{bits(2)}},
		{Name: "fchmodat2", Conditions: seccomp.ArgumentConditions{bits(2)}},
		{Name: "creat", Conditions: seccomp.ArgumentConditions{bits(1)}},
		{Name: "mknod", Conditions: seccomp.ArgumentConditions{bits(1)}},
		{Name: "mknodat", Conditions: seccomp.ArgumentConditions{bits(2)}},
		{Name: "open", Conditions: seccomp.ArgumentConditions{flags(1), bits(2)}},
		{Name: "openat", Conditions: seccomp.ArgumentConditions{flags(2), bits(3)}},
	} {
		if _, ok := names[r.Name]; ok {
			out = append(out, r)
		}
	}
	return out
}

// ioctlIs matches an ioctl(2) whose request is cmd: its low 32 bits (the
// kernel reads the request as an unsigned int, so the high bits of the
// register may hold anything), each bit of cmd set and no other. The
// filter's BitsSet is true when any bit of its mask is set, hence one
// condition per bit.
func ioctlIs(cmd uint32) seccomp.ArgumentConditions {
	conds := seccomp.ArgumentConditions{{Argument: 1, Operation: seccomp.BitsNotSet, Value: uint64(^cmd)}}
	for bit := uint32(1); bit != 0; bit <<= 1 {
		if cmd&bit != 0 {
			conds = append(conds, seccomp.Condition{Argument: 1, Operation: seccomp.BitsSet, Value: uint64(bit)})
		}
	}
	return conds
}

// nativeOnly installs, on every thread, a filter that fails every system
// call of another ABI than the native one with ENOSYS: the main filter
// (filterSyscalls) matches native numbers only, and a 64-bit x86 process
// can still make i386 calls (int 0x80) where the kernel emulates them.
func nativeOnly() error {
	info, err := arch.GetInfo("")
	if err != nil {
		return err
	}
	prog, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipFalse: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	})
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog))); errno != 0 { //nolint:gosec // the kernel's filter layout
		return fmt.Errorf("cannot refuse other ABIs' system calls: %w", errno)
	}
	runtime.KeepAlive(filter)
	return nil
}

// restrictFS enforces the Landlock domain for ABI version abi: exactly the
// rights this ABI knows (never "best effort", which would run unconfined
// where Landlock is missing). The rights that modify the filesystem are
// internal/landlock's WriteRights, handled and granted only beneath the
// writable roots; reads and execution are not handled, so they stay allowed
// everywhere, unless c.ReadDenied names paths to hide (then reads are
// handled too: granted beneath the writable roots and everywhere but those
// paths, addReadRules). From ABI 9, with Unix sockets open, connecting to a pathname
// socket is handled too and granted on the named sockets and, with
// UnixSockets or OwnUnixSockets, beneath the writable roots.
func restrictFS(c Confinement, abi int) error {
	known := hlandlock.Preset(abi)
	fsRights := hlandlock.WriteRights(abi)
	var rootsResolve, handledResolve landlock.AccessFSSet
	if known.HandledAccessFS&resolveUnix != 0 && (c.UnixSockets || c.OwnUnixSockets || len(c.UnixSocketPaths) > 0) {
		handledResolve = resolveUnix
		if c.UnixSockets || c.OwnUnixSockets {
			rootsResolve = resolveUnix
		}
	}
	var reads landlock.AccessFSSet
	if len(c.ReadDenied) > 0 {
		if err := checkReadDenied(c.ReadDenied, c.WritableRoots); err != nil {
			return err
		}
		reads = readRights
	}
	cfg := landlock.Config{HandledAccessFS: fsRights | handledResolve | reads}
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
		rules = append(rules, landlock.PathAccess(fsRights|rootsResolve|reads, c.WritableRoots...).IgnoreIfMissing())
	}
	if handledResolve != 0 && len(c.UnixSocketPaths) > 0 {
		// A named socket gone since it was resolved grants nothing.
		rules = append(rules, landlock.PathAccess(handledResolve, c.UnixSocketPaths...).IgnoreIfMissing())
	}
	if reads != 0 {
		return restrictReads(cfg, rules, c.ReadDenied)
	}
	return cfg.Restrict(rules...)
}

// filterSyscalls installs the seccomp filter on every thread. Always: no
// call may give a file a special bit (specialModeRules: EPERM), openat2
// fails with ENOSYS (callers fall back to openat, which the filter reads),
// and the kernel's keys are out of reach (add_key, request_key, keyctl:
// EPERM; keys are not namespaced, and a key's owner may change its
// permissions by id, so a command of the server's user, or uid 0 for root's,
// would reach them). With network
// off, socket(2) of every family but AF_UNIX fails with EPERM; with Unix
// sockets off and none named, AF_UNIX too (seccomp cannot read the path a
// connect names, so pathname sockets cannot be told apart: named ones are
// told apart by Landlock or the bubblewrap view); socketpair(2) stays
// allowed (its two ends reach nothing outside). Always: io_uring_setup (its socket and
// connect operations bypass the filter), the mount API (mount, umount2,
// pivot_root, open_tree, move_mount, fsopen, fsconfig, fsmount, fspick,
// mount_setattr), open_by_handle_at and bpf fail with EPERM, so nothing
// reshapes the view the command was given, even with capabilities of a
// namespace of its own; and the ioctls TIOCSTI (typing into a terminal's
// input) and TIOCLINUX fail with EPERM, so a command with capabilities (a
// root server's under the Landlock isolation) types into no terminal, its
// own included (issue 38).
func filterSyscalls(c Confinement) error {
	// Named sockets and the command's own need AF_UNIX sockets.
	c.UnixSockets = c.UnixSockets || len(c.UnixSocketPaths) > 0 || c.OwnUnixSockets
	groups := []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: []string{
		"io_uring_setup", "mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig",
		"fsmount", "fspick", "mount_setattr", "open_by_handle_at", "bpf", "add_key", "request_key", "keyctl",
	}}}
	native, err := arch.GetInfo("")
	if err != nil {
		return err
	}
	groups = append(groups,
		seccomp.SyscallGroup{Action: seccomp.ActionErrno, NamesWithCondtions: specialModeRules(native.SyscallNames)},
		seccomp.SyscallGroup{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{
			{Name: "ioctl", Conditions: ioctlIs(unix.TIOCSTI)}, {Name: "ioctl", Conditions: ioctlIs(unix.TIOCLINUX)},
		}},
		seccomp.SyscallGroup{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"openat2"}})
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
