package landlock

import (
	golandlock "github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// presets are go-landlock's configurations by ABI version: presets[v] handles
// every right Landlock ABI v knows.
var presets = []golandlock.Config{
	{},
	golandlock.V1, golandlock.V2, golandlock.V3, golandlock.V4, golandlock.V5, golandlock.V6,
	golandlock.V7, golandlock.V8, golandlock.V9, golandlock.V10, golandlock.V11,
}

// maxKnownABI is the newest Landlock ABI whose rights go-landlock names: a
// newer kernel is asked for these rights only.
var maxKnownABI = len(presets) - 1

// writeRights are the Landlock rights that modify the filesystem: writing a
// file; removing a directory or file; making a character device, directory,
// regular file, socket, FIFO, block device or symlink; linking or renaming
// across directories (refer, ABI 2); truncating (ABI 3). Reads and execution
// are not among them: a domain that handles only these leaves reading and
// running everywhere as the process's permissions allow.
const writeRights = golandlock.AccessFSSet(ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile |
	ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo |
	ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSRefer | ll.AccessFSTruncate)

// Preset returns go-landlock's configuration for Landlock ABI abi: every
// filesystem and network right and scope that ABI knows. An abi above the
// newest go-landlock knows gets that newest set; an abi below 1 gets the empty
// configuration, which handles nothing.
func Preset(abi int) golandlock.Config {
	return presets[max(0, min(abi, maxKnownABI))]
}

// WriteRights returns the rights that modify the filesystem (writing,
// removing, making entries, refer from ABI 2, truncate from ABI 3) that
// Landlock ABI abi knows. A domain built to allow writes only beneath some
// roots handles these and grants them beneath each root: the Executor's
// threads (which also handle device ioctl, see handledAccess) and the command
// runner's helper (internal/subproc).
func WriteRights(abi int) golandlock.AccessFSSet {
	return Preset(abi).HandledAccessFS & writeRights
}

// handledAccess returns the filesystem accesses an Executor domain of ABI abi
// handles: the write rights and, from ABI 5, ioctl on device files, which no
// file mutation needs. No read or execute access.
func handledAccess(abi int) uint64 {
	return uint64(WriteRights(abi) | Preset(abi).HandledAccessFS&ll.AccessFSIoctlDev)
}
