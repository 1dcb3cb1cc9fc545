package subproc

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// namespaceAttr returns how the confining stage is started so it gets a
// private mount namespace: as root, a new mount namespace; otherwise also a
// new user namespace (mapping the caller's uid and gid to themselves) that
// owns it, with CAP_SYS_ADMIN in it kept across the exec as an ambient
// capability (an exec by a uid other than 0 clears the others), so the
// stage may mount there; the stage drops it before it runs the command
// (dropAmbient).
func namespaceAttr() *syscall.SysProcAttr {
	if os.Geteuid() == 0 {
		return &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWNS}
	}
	return &syscall.SysProcAttr{
		Cloneflags:  unix.CLONE_NEWUSER | unix.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}},
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN},
	}
}

// dropAmbient clears the calling process's ambient capabilities, so the
// command it execs next keeps none of them.
func dropAmbient() error {
	err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	if errors.Is(err, unix.EINVAL) {
		return nil // a kernel without ambient capabilities has none to drop
	}
	return err
}

var mountNS = sync.OnceValue(func() bool {
	proc, err := os.StartProcess(shell, []string{"sh", "-c", "exit 0"}, &os.ProcAttr{
		Dir: "/", Env: []string{}, Sys: namespaceAttr(),
	})
	if err != nil {
		return false
	}
	st, err := proc.Wait()
	return err == nil && st.Success()
})

// MountNamespace reports whether this process can start a command in a
// private mount namespace (probed once, by starting `/bin/sh` in one), and
// so whether Confinement.ReadOnlyPaths are carved out.
func MountNamespace() bool { return mountNS() }

// carveOut makes paths read-only in the calling process's mount namespace,
// which must be private to it: first every mount becomes private (so
// nothing propagates back to the host), then each path is bind-mounted onto
// itself and remounted read-only. A path that vanished since it was found
// is skipped; any other failure is returned (fail closed).
func carveOut(paths []string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	for _, p := range paths {
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return fmt.Errorf("bind-mounting %s: %w", p, err)
		}
		if err := unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("remounting %s read-only: %w", p, err)
		}
	}
	return nil
}

// hideTerminals mounts an empty read-only tmpfs on /dev/pts, in the
// confining stage's own mount namespace (made private by carveOut): the
// host's pseudo-terminals, the user's shells' among them, cannot be opened
// by path, so a command neither reads what is typed there nor drives them.
// own, when not "", is the command's own terminal (/dev/pts/N, its stdin):
// it alone is bound back at its path, so ttyname and `tty` still name it.
// A missing /dev/pts is left alone.
func hideTerminals(own string) error {
	const flags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	tree := -1
	if own != "" {
		// A copy of its mount, taken before the tmpfs covers the path
		// (the descriptor's own mount is the parent namespace's: not
		// bindable here).
		var err error
		if tree, err = unix.OpenTree(unix.AT_FDCWD, own, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC); err != nil {
			return fmt.Errorf("copying the command's terminal: %w", err)
		}
		defer func() { _ = unix.Close(tree) }()
	}
	err := unix.Mount("tmpfs", "/dev/pts", "tmpfs", flags, "size=4k,mode=0755")
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	if tree >= 0 {
		f, err := os.OpenFile(own, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		_ = f.Close()
		if err := unix.MoveMount(tree, "", unix.AT_FDCWD, own, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("binding the command's terminal: %w", err)
		}
	}
	return unix.Mount("", "/dev/pts", "", unix.MS_REMOUNT|unix.MS_RDONLY|flags, "")
}

// ownTerminal is the path of the host pseudo-terminal on stdin
// (/dev/pts/N), "" when stdin is none.
func ownTerminal() string {
	p, err := os.Readlink("/proc/self/fd/0")
	if err != nil || !strings.HasPrefix(p, "/dev/pts/") || strings.Contains(p[len("/dev/pts/"):], "/") {
		return ""
	}
	return p
}
