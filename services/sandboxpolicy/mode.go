// Package sandboxpolicy is the one policy of harness, on top of the sandbox
// vocabulary, for the file tools and commands alike: it resolves the
// execution policy of each call per session and tool family (an approved
// escalation, else the session's last "sandbox/mode" event covering the
// family, else the deployment default; capped by the session's ceiling,
// an HTTP principal's widest mode), pins each session's canonical
// workspace roots, owns the writable roots (workspace, temp areas,
// --writable-root) and the protected paths inside them, answers which
// boundary a mutation crosses, and runs the escalation ladder through a
// sandbox.Approver, recording a session grant for the asking family only
// and asking nothing beyond the session's ceiling.
// It decides; enforcement lives in fssandbox (files) and execsandbox
// (commands), which ask it and never compute roots of their own.
package sandboxpolicy

import (
	"strings"

	"github.com/dsh-go/harness/services/sandbox"
)

// allowed lists the mode spellings for an error message.
func allowed() string {
	names := make([]string, 0, 3)
	for _, m := range sandbox.Modes() {
		names = append(names, string(m))
	}
	return strings.Join(names, ", ")
}
