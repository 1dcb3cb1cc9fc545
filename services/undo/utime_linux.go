package undo

import "golang.org/x/sys/unix"

// utimeOmit leaves a time as it is in utimensat(2).
const utimeOmit = unix.UTIME_OMIT
