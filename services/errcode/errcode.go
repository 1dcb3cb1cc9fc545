// Package errcode is the one type of the machine-readable codes every
// result and error of harness carries (issue 21): the filesystem seam's
// FS_* codes (services/fs), the runner's EXEC_* and SANDBOX_UNAVAILABLE
// (services/exec), the escalation's SANDBOX_* (services/sandboxpolicy), the
// guard's SANDBOX_NETWORK_DENIED (a command refused the network, inferred
// by the exec tool), the tools' INVALID_ARGUMENT and
// EXEC_TIMED_OUT/EXEC_CANCELLED, the server's
// SERVER_BUSY, the policy's EXECUTABLE_EXPOSED (a server that will not
// start). Each package declares its own values of this type; a front
// end sends a result's code as it is (MCP: `_meta["harness/code"]`). It is
// vocabulary: it imports nothing.
package errcode

// Code is a machine-readable error code, e.g. "FS_NOT_FOUND"; "" is none.
type Code string

// InvalidArgument is the code of an argument refused before anything was
// done (a missing or ill-typed argument, a key the tool does not declare,
// an escalation pairing error).
const InvalidArgument Code = "INVALID_ARGUMENT"
