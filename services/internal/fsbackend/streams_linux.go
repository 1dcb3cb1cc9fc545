package fsbackend

import "golang.org/x/sys/unix"

// consumingStreams names, by the magic number of the filesystem they live
// on, the files that fstat calls regular but whose reads consume what they
// return and wait when nothing is pending: the kernel log (/proc/kmsg,
// read through syslog(2)) and the tracing pipes.
var consumingStreams = map[int64][]string{
	unix.PROC_SUPER_MAGIC: {"kmsg"},
	unix.TRACEFS_MAGIC:    {"trace_pipe", "trace_pipe_raw"},
	unix.DEBUGFS_MAGIC:    {"trace_pipe", "trace_pipe_raw"},
}
