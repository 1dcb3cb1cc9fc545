// Package audit is the record of what every tool call did (issue 25): one
// JSON Lines record per call, with the session, the client, the tool, the
// canonical paths it touched (never contents or secrets), the sandbox mode it
// ran under, the decision (allowed, denied with its marker, an escalation
// asked and the user's answer with its scope), the outcome and its code, the
// bytes, the content hashes before and after a mutation, and for a command
// its command line, working directory, exit, duration, output sizes, the
// denials inferred and the network names allowed and refused.
//
// A call's record is built while the call runs: the guard opens an Entry for
// the call and puts it in the call's context (NewContext), the tool families
// and the backends beneath them annotate it (FromContext; every method of a
// nil *Entry does nothing, so code that runs outside a call needs no check),
// and the guard closes it into a Record handed to the composed Sink.
package audit

import "time"

// Decision is what the sandbox decided about a call.
type Decision string

// The decisions. Allowed: the call ran under its standing policy. Denied: the
// sandbox refused it (Record.Marker names the marker). Approved: an
// escalation was asked and the user allowed it (Record.Escalation says how).
// Declined: an escalation was asked and not allowed (rejected, cancelled, or
// no one to ask). Invalid: the call was refused before the sandbox was
// consulted (bad arguments). Refused: the server refused the call before
// its tool ran (every call slot taken and the queue full, or the call
// cancelled while it waited for a slot; Record.Code says which).
const (
	Allowed  Decision = "allowed"
	Denied   Decision = "denied"
	Approved Decision = "approved"
	Declined Decision = "declined"
	Invalid  Decision = "invalid"
	Refused  Decision = "refused"
)

// Outcome is how a call ended: OK, or Error with Record.Code.
type Outcome string

// The outcomes.
const (
	OK    Outcome = "ok"
	Error Outcome = "error"
)

// Record is one call's audit record, one JSON object per line of the log.
// Times are UTC; durations are in milliseconds; sizes in bytes. Optional
// fields are omitted when empty. A record is bounded (bound.go): lists keep
// MaxList items and count the rest, strings MaxField bytes, and the line
// the log writes is at most MaxRecordBytes.
type Record struct {
	Time    time.Time `json:"time"`
	Session string    `json:"session,omitempty"`
	// Client is the MCP client's name and version ("claude-code 2.1.0"),
	// as its initialize said.
	Client string `json:"client,omitempty"`
	// Principal is who the caller authenticated as: the bearer token's
	// subject of an HTTP session (issue 26); absent over stdio.
	Principal string `json:"principal,omitempty"`
	Tool      string `json:"tool"`
	// Call is the front end's id of the call (the JSON-RPC request id).
	Call string `json:"call,omitempty"`
	// Mode is the sandbox mode the call ran under (after an approved
	// escalation, the mode approved).
	Mode  string   `json:"mode,omitempty"`
	Paths []string `json:"paths,omitempty"`
	// PathsMore counts the paths past the first MaxList, left out.
	PathsMore int      `json:"paths_more,omitempty"`
	Decision  Decision `json:"decision"`
	// Marker is the sandbox denial's marker line ("[sandbox: ...]").
	Marker     string      `json:"marker,omitempty"`
	Escalation *Escalation `json:"escalation,omitempty"`
	Outcome    Outcome     `json:"outcome"`
	Code       string      `json:"code,omitempty"`
	// Bytes is the size of what the call read or wrote (a read: the bytes
	// returned; a write: the bytes written).
	Bytes   int64    `json:"bytes,omitempty"`
	Changes []Change `json:"changes,omitempty"`
	// ChangesMore counts the changes past the first MaxList, left out.
	ChangesMore int      `json:"changes_more,omitempty"`
	Command     *Command `json:"command,omitempty"`
	DurationMS  float64  `json:"duration_ms"`
	// Lost is the number of records the log could not write (its queue
	// was full, or a write failed) since the record written before this
	// one; omitted when none was lost.
	Lost int64 `json:"lost,omitempty"`
}

// Escalation is an escalation a call asked for and the answer. What is the
// mode asked ("danger-full-access"), "read <path>" for a credential read, or
// "hosts <a>, <b>" for network hosts; Answer is the approver's outcome
// (sandbox.Outcome: allowed-once, allowed-for-session, rejected, cancelled,
// unavailable); Scope is "once" or "session" for an allowed answer.
type Escalation struct {
	What          string `json:"what"`
	Justification string `json:"justification,omitempty"`
	Answer        string `json:"answer"`
	Scope         string `json:"scope,omitempty"`
}

// Change is one path a mutation changed: its canonical path, the SHA-256 of
// its content before and after ("sha256:<hex>"; "" for absent or not a
// regular file), and the journal entry that keeps its prior state ("" when
// none does).
type Change struct {
	Path    string `json:"path"`
	Before  string `json:"before,omitempty"`
	After   string `json:"after,omitempty"`
	Journal string `json:"journal,omitempty"`
}

// MaxCommandLine is the number of bytes of a command line a record keeps;
// a longer one is cut and ends with "…".
const MaxCommandLine = 1024

// Command is what a command call ran: its command line (cut to
// MaxCommandLine bytes), working directory, exit code (nil when it did not
// exit: a signal, a timeout, still running in the background) or signal,
// the sizes of its output streams, for exec_input what was typed to it
// (Input: redacted and cut as a command line, or a note that it was typed
// while the terminal did not echo), the denials inferred from its output (the
// markers), the network names the call was allowed and the ones the proxy
// refused, and Journal: whether the journal can undo what it changed ("not
// journaled", or the journal entry when --journal-commands is on). Each
// list keeps its first MaxList items; its *More field counts the rest
// (HostsRefusedMore also counts the refusals the proxy's own record left
// out past exec.MaxRefused hosts, one per connection).
type Command struct {
	Line       string `json:"line"`
	Workdir    string `json:"workdir,omitempty"`
	Exit       *int   `json:"exit,omitempty"`
	Signal     string `json:"signal,omitempty"`
	Background bool   `json:"background,omitempty"`
	// StartMS is the sandbox's own cost of starting a foreground command,
	// in milliseconds (exec.Result.Start; absent where not measured);
	// RunMS the command's wall time (exec.Result.Duration).
	StartMS          float64  `json:"start_ms,omitempty"`
	RunMS            float64  `json:"run_ms,omitempty"`
	Input            string   `json:"input,omitempty"`
	Stdout           int64    `json:"stdout_bytes"`
	Stderr           int64    `json:"stderr_bytes"`
	Denials          []string `json:"denials,omitempty"`
	DenialsMore      int      `json:"denials_more,omitempty"`
	HostsAllowed     []string `json:"hosts_allowed,omitempty"`
	HostsAllowedMore int      `json:"hosts_allowed_more,omitempty"`
	HostsRefused     []string `json:"hosts_refused,omitempty"`
	HostsRefusedMore int      `json:"hosts_refused_more,omitempty"`
	Journal          string   `json:"journal"`
}

// NotJournaled is Command.Journal of a command whose changes the journal
// does not keep (commands are journaled only with --journal-commands).
const NotJournaled = "not journaled"

// Sink receives each call's record when the call ends. Append must not
// block the call for long (a full disk is reported, never waited out) and
// must be safe for concurrent use.
type Sink interface {
	Append(r Record)
}
