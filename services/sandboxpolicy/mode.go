// Package sandboxpolicy is the policy service of the write fence, on top of
// the sandbox vocabulary: it resolves the execution policy of each call per
// session (an approved escalation, else the session's "sandbox/mode"
// override, else the deployment default), pins each session's canonical
// workspace root, and runs the escalation ladder through a sandbox.Approver. It is
// data plus predicates: enforcement lives in fssandbox.
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
