package protectscan

import "golang.org/x/sys/unix"

// The Linux flags and system calls the walks are made of; sys_other.go
// refuses them elsewhere.

func sysGetdents(fd int, buf []byte) (int, error) { return unix.Getdents(fd, buf) }
