// Package landlock runs functions on OS threads confined by a Landlock domain
// that allows filesystem writes only beneath a set of writable roots.
// Landlock checks every access against the file's real ancestry at the moment
// of the syscall, so a directory that another process renamed out of a root is
// refused by the kernel, even through a descriptor opened while it was still
// inside: the gap that dirfd's CheckBeneath narrows but cannot close.
//
// landlock_restrict_self confines the calling thread only, and Go moves
// goroutines between threads freely. An Executor therefore keeps, per distinct
// set of roots, a small pool of goroutines that each called
// runtime.LockOSThread and never unlock it, set PR_SET_NO_NEW_PRIVS and then
// restricted their own thread. Two rules of the Go runtime (Go 1.10 and later)
// keep the domain on those threads and off every other:
//
//   - A locked thread runs its goroutine and nothing else, and the runtime
//     never clones a new thread from a locked one (it asks its template thread
//     instead): no other goroutine runs under the domain and no new thread
//     inherits it.
//   - A goroutine that exits while locked takes its thread with it: the
//     runtime terminates the thread instead of returning it to the scheduler.
//     A worker that idles out, is evicted or fails to restrict itself leaves no
//     restricted thread behind. The main thread is the exception: the runtime
//     parks it for good instead of terminating it, so a worker that starts
//     there hands its work to a new worker, which cannot run on a locked
//     thread, and unlocks the main thread before restricting anything.
//
// The domain handles the write accesses the kernel's ABI knows (writing a
// file; removing a directory or file; making a character device, directory,
// regular file, socket, FIFO, block device or symlink; from ABI 2 linking or
// renaming across directories (refer); from ABI 3 truncating; from ABI 5
// ioctl on devices) and grants all of them beneath each root. Reads and
// execution are not handled: they stay as the process's permissions allow.
//
// What it does not protect: changes Landlock does not mediate (chmod, chown,
// timestamps, extended attributes); writes through descriptors opened before
// the call or by another thread (Landlock checks at open, not at write);
// goroutines the function starts (they run on other, unrestricted threads);
// other processes; mount points inside a root (Landlock walks up through a
// bind mount to where it is mounted, so a bind mount of /etc inside a root is
// writable). A root is opened by path when a thread restricts itself, with no
// symlink allowed anywhere in it, and the rule then holds that directory: a
// root renamed later takes its grant along. A function must not call
// runtime.UnlockOSThread: that would hand the restricted thread back to the
// scheduler, where other goroutines would run under the domain.
//
// From ABI 7 the kernel's audit subsystem, where it is enabled, logs each
// refusal by default.
//
// Landlock ABI 1 (Linux 5.13 to 5.18) refuses every link or rename across
// directories, which the publication of a write needs; the package requires
// ABI 2 and reports an older kernel as unavailable.
//
// The package is harness's one Landlock binding: the write rights
// (WriteRights), the per-ABI presets (Preset) and the kernel's ABI (ABI,
// KernelABI) are defined here, on github.com/landlock-lsm/go-landlock, and the
// command runner's helper (internal/subproc) builds its process-wide domain
// from them.
package landlock

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// minABI is the oldest Landlock ABI the package uses: ABI 2 added the refer
// right, without which every cross-directory link or rename is refused.
const minABI = 2

// Reason says why Landlock cannot confine this process.
type Reason int

const (
	// NoKernelSupport means landlock_create_ruleset is ENOSYS and no seccomp
	// filter is active, so the kernel is older than 5.13 or built without
	// CONFIG_SECURITY_LANDLOCK.
	NoKernelSupport Reason = iota + 1
	// NotEnabled means the kernel has Landlock but did not enable it at boot
	// (EOPNOTSUPP: "landlock" is missing from the lsm= list).
	NotEnabled
	// Blocked means a seccomp filter is active and answered the syscall with an
	// error (container runtimes' filters do this for syscalls they do not
	// know), or the syscall failed with an error Landlock itself never returns.
	Blocked
	// OldABI means the kernel's Landlock is ABI 1, which refuses every link or
	// rename across directories.
	OldABI
)

// String returns the reason in a few words.
func (r Reason) String() string {
	switch r {
	case NoKernelSupport:
		return "the kernel has no Landlock"
	case NotEnabled:
		return "Landlock is not enabled at boot"
	case Blocked:
		return "landlock_create_ruleset is blocked"
	case OldABI:
		return "the kernel's Landlock ABI is too old"
	default:
		return fmt.Sprintf("reason %d", int(r))
	}
}

// UnavailableError says why Landlock cannot confine this process: ABI and
// Executor's constructor return it.
type UnavailableError struct {
	Reason Reason
	// Errno is landlock_create_ruleset's answer to the version query; zero
	// for OldABI.
	Errno unix.Errno
	// ABI is the kernel's Landlock ABI for OldABI, else zero.
	ABI int
	// Seccomp reports whether a seccomp filter was active on the probing
	// thread.
	Seccomp bool
}

// Error describes the reason and the evidence for it.
func (e *UnavailableError) Error() string {
	switch e.Reason {
	case NoKernelSupport:
		return "landlock unavailable: the kernel has no Landlock (ENOSYS; it needs Linux 5.13+ built with CONFIG_SECURITY_LANDLOCK)"
	case NotEnabled:
		return "landlock unavailable: the kernel has Landlock but it is not enabled (EOPNOTSUPP; add landlock to the lsm= boot parameter)"
	case Blocked:
		if e.Seccomp {
			return fmt.Sprintf("landlock unavailable: landlock_create_ruleset failed with %s under an active seccomp filter, which blocks it (or the kernel lacks Landlock)", errnoName(e.Errno))
		}
		return fmt.Sprintf("landlock unavailable: landlock_create_ruleset failed with %s, an error Landlock never returns", errnoName(e.Errno))
	case OldABI:
		return fmt.Sprintf("landlock unavailable: the kernel's Landlock ABI is %d; ABI %d (Linux 5.19+) is needed for links and renames across directories", e.ABI, minABI)
	default:
		return "landlock unavailable: " + e.Reason.String()
	}
}

// Unwrap returns the errno, so errors.Is(err, unix.ENOSYS) works.
func (e *UnavailableError) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}

// errnoName returns the symbolic name of an errno ("ENOSYS"), or its number.
func errnoName(e unix.Errno) string {
	if name := unix.ErrnoName(e); name != "" {
		return name
	}
	return fmt.Sprintf("errno %d", int(e))
}

// ABI returns the Landlock ABI version of the running kernel (7 on Linux
// 6.15+), or an *UnavailableError saying why Landlock cannot confine this
// process (an ABI older than 2 included). The kernel is asked once per
// process.
func ABI() (int, error) { return probeOnce() }

var probeOnce = sync.OnceValues(probeABI)

// KernelABI returns the running kernel's Landlock ABI version whatever it is
// (1 included, which ABI refuses), or 0 when Landlock cannot be used at all
// (ABI says why). The command runner, which needs no cross-directory link,
// asks this; the kernel is asked once per process, by the same probe as ABI.
func KernelABI() int {
	abi, _ := probeOnce()
	return abi
}

// probeABI asks the kernel for its Landlock ABI on the calling thread. It
// returns the version for an ABI older than minABI, with the error.
func probeABI() (int, error) {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		var errno unix.Errno // go-landlock returns the bare errno
		_ = errors.As(err, &errno)
		return 0, unavailable(errno, seccompFiltered())
	}
	if v < minABI {
		return v, &UnavailableError{Reason: OldABI, ABI: v}
	}
	return v, nil
}

// unavailable classifies a failed version query. Landlock answers it with
// ENOSYS (not built in) or EOPNOTSUPP (built in, not enabled) only; any other
// errno, or ENOSYS under a seccomp filter, points at the filter.
func unavailable(errno unix.Errno, seccomp bool) *UnavailableError {
	e := &UnavailableError{Errno: errno, Seccomp: seccomp}
	switch {
	case errno == unix.EOPNOTSUPP:
		e.Reason = NotEnabled
	case errno == unix.ENOSYS && !seccomp:
		e.Reason = NoKernelSupport
	default:
		e.Reason = Blocked
	}
	return e
}

// seccompFiltered reports whether the calling thread runs under a seccomp
// filter (/proc/thread-self/status "Seccomp: 2"). Filters are per thread, so
// the thread's own status is read, not the process leader's.
func seccompFiltered() bool {
	data, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("Seccomp:")); ok {
			return string(bytes.TrimSpace(v)) == "2"
		}
	}
	return false
}
