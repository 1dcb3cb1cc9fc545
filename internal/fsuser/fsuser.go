// Package fsuser is a user's rights over the filesystem: it runs a function
// with another user's filesystem identity on the calling goroutine's OS
// thread, so that the kernel decides every path the function reaches as it
// decides that user's (a server running as root reaches, through its file
// tools, only what the workspace owner its commands run as could, issue
// 35), and it answers, by the kernel's own rule (mode bits and POSIX
// access ACLs), whether a user may search or write a path (Account.May,
// issue 37), for the command runner and the denial inference alike.
//
// Linux keeps a filesystem user id, group id and supplementary group list
// per thread (setfsuid(2), setfsgid(2), and setgroups(2) issued as a raw
// system call, not broadcast to every thread as the syscall package's
// Setgroups is). A filesystem uid other than 0 drops CAP_DAC_OVERRIDE,
// CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_CHOWN, CAP_FSETID and the other
// filesystem capabilities from the thread's effective set; setting it back
// to 0 raises them again from the permitted set. Do locks the goroutine to
// its thread for the call, so every system call fn makes on its own
// goroutine runs with the identity; goroutines fn starts do not.
package fsuser

import (
	"errors"
	"fmt"
	"runtime"
)

// User is a filesystem identity: a user id and a group id, with no
// supplementary group (as a root server's commands run: execsandbox's
// commandUser). Files and directories created under it belong to UID and
// GID (or the directory's group under a set-group-ID directory).
type User struct {
	UID, GID int
}

// maxGroups bounds the supplementary groups of the thread that Do saves
// and restores (NGROUPS_MAX is 65536; a server has a handful).
const maxGroups = 256

// identity is a thread's filesystem identity.
type identity struct {
	uid, gid int
	groups   [maxGroups]uint32
	n        int
}

// Do runs fn with u's filesystem identity on the calling goroutine's
// thread, locked to it for the call, and returns fn's error. A nil u runs
// fn as it is. The thread's previous identity (the process's, or an outer
// Do's) is restored when fn returns or panics and the thread is unlocked.
// Errors: the identity could not be taken (the process lacks CAP_SETUID or
// CAP_SETGID: fn did not run), or could not be given back, joined to fn's
// error; the thread then stays locked to the goroutine with at most u's
// reach, and the runtime discards it when the goroutine exits.
func (u *User) Do(fn func() error) (err error) {
	if u == nil {
		return fn()
	}
	runtime.LockOSThread()
	var prev identity
	if err := prev.save(); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	if prev.uid == u.UID && prev.gid == u.GID && prev.n == 0 {
		// Already u's (an outer Do): nothing to take or give back.
		defer runtime.UnlockOSThread()
		return fn()
	}
	defer func() {
		if rerr := prev.restore(); rerr != nil {
			err = errors.Join(err, rerr)
			return // the thread stays locked: see the doc
		}
		runtime.UnlockOSThread()
	}()
	if err := u.enter(prev.n > 0); err != nil {
		return err
	}
	return fn()
}

// restore gives the thread the identity saved. Each change of a
// credential costs microseconds, so the groups are set again only when
// there were any (Do cleared them).
func (id *identity) restore() error {
	return set(id.uid, id.gid, id.groups[:id.n], id.n > 0)
}

// enter gives the thread u's identity, with no supplementary group;
// hasGroups reports whether the thread has groups to clear.
func (u *User) enter(hasGroups bool) error {
	if u.UID < 0 || u.GID < 0 {
		return fmt.Errorf("fsuser: invalid identity %d:%d", u.UID, u.GID)
	}
	return set(u.UID, u.GID, nil, hasGroups)
}
