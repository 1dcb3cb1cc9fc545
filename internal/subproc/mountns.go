package subproc

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// namespaceAttr returns how the confining stage is started so it gets a
// private mount namespace: as root, a new mount namespace; otherwise also a
// new user namespace (mapping the caller's uid and gid to themselves) that
// owns it.
func namespaceAttr() *syscall.SysProcAttr {
	if os.Geteuid() == 0 {
		return &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWNS}
	}
	return &syscall.SysProcAttr{
		Cloneflags:  unix.CLONE_NEWUSER | unix.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}},
	}
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
