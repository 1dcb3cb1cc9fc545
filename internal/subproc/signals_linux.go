package subproc

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// defaultSignals gives every signal the calling process ignores its
// default action back and unblocks every signal on the calling thread, so
// the program it executes next starts as a shell's commands do. An ignored
// signal outlives exec (a caught one does not): a server started with
// SIGINT and SIGQUIT ignored (a background job of a non-interactive shell
// ignores both) would pass that on to every command, and Ctrl-C typed on a
// command's terminal would interrupt nothing (a shell cannot even trap a
// signal ignored on its entry). It allocates nothing and makes only bare
// system calls, so it may run under the command's limits right before the
// exec. Errors are ignored: a signal left as it was is what happened
// before.
func defaultSignals() {
	// The kernel's struct sigaction: the handler first, a pointer (SIG_DFL
	// 0, SIG_IGN 1), then flags, restorer (where the architecture has one)
	// and mask; all zero is SIG_DFL with no flag and an empty mask. 32
	// bytes hold it on every architecture with a 64-signal set.
	var old, dfl [4]uint64
	for sig := uintptr(1); sig <= 64; sig++ {
		if sig == uintptr(unix.SIGKILL) || sig == uintptr(unix.SIGSTOP) {
			continue
		}
		if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, sig, 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); errno != 0 || *(*uintptr)(unsafe.Pointer(&old)) != 1 {
			continue
		}
		_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, sig, uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	}
	var none uint64
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&none)), 0, 8, 0, 0)
}
