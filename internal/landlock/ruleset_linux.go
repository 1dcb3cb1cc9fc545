package landlock

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// rulesetAttrSize is the part of struct landlock_ruleset_attr this package
// fills: handled_access_fs alone. The kernel zero-fills a shorter struct, so
// the same size works from ABI 1 to the newest.
const rulesetAttrSize = unsafe.Sizeof(uint64(0))

// restrictSelf confines the calling thread, which must be locked to its
// goroutine for good: PR_SET_NO_NEW_PRIVS, then a Landlock domain that handles
// the accesses in handled and grants them all beneath each root. Roots are
// opened with no symlink allowed anywhere in them (ELOOP). On error the thread
// may be half-configured and must not be reused.
func restrictSelf(roots []string, handled uint64) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl(PR_SET_NO_NEW_PRIVS)", err)
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), rulesetAttrSize, 0)
	if errno != 0 {
		return os.NewSyscallError("landlock_create_ruleset", errno)
	}
	ruleset := int(r)
	defer func() { _ = unix.Close(ruleset) }()
	for _, root := range roots {
		if err := addRoot(ruleset, root, handled); err != nil {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return os.NewSyscallError("landlock_restrict_self", errno)
	}
	return nil
}

// addRoot adds a path_beneath rule granting allowed beneath the directory root.
func addRoot(ruleset int, root string, allowed uint64) error {
	fd, err := openRoot(root)
	if err != nil {
		return &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer func() { _ = unix.Close(fd) }()
	rule := unix.LandlockPathBeneathAttr{Allowed_access: allowed, Parent_fd: int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
	if errno != 0 {
		return &os.PathError{Op: "landlock_add_rule", Path: root, Err: errno}
	}
	return nil
}

// openRoot opens the directory root as an O_PATH descriptor, refusing a
// symlink anywhere in the path: the grant goes to the directory the caller
// named, never to one a link was retargeted to.
func openRoot(root string) (int, error) {
	return dirfd.OpenNoSymlinks(root, unix.O_PATH|unix.O_DIRECTORY)
}

// onMainThread reports whether the calling thread is the process's main
// thread.
func onMainThread() bool { return unix.Gettid() == unix.Getpid() }
