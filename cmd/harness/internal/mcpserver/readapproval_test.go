package mcpserver_test

import (
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// TestElicitationOfACredentialRead: the approval form of a read in the
// deny-read set shows sandboxpolicy.Prompt's credential-read question, and
// its decision field says both allow answers allow that one read only; a
// command's credential read lists what the once answer makes readable; a
// write's form keeps the session choice.
func TestElicitationOfACredentialRead(t *testing.T) {
	read := sandbox.ApprovalRequest{
		Family: sandbox.FileTools, Tool: "read", Mode: sandbox.DangerFullAccess, Justification: "why",
		Target: "/home/u/.ssh/id_ed25519", ReadRule: "~/.ssh (default)",
	}
	// A command naming ~/.ssh (issue 35): the question lists what the
	// once answer makes readable, the directory's names only.
	command := sandbox.ApprovalRequest{
		Family: sandbox.Commands, Tool: "exec", Mode: sandbox.DangerFullAccess, Justification: "why",
		Command: "ls ~/.ssh; head ~/.ssh/*", Workdir: "/ws", Reads: []string{"/home/u/.ssh/"},
	}
	write := sandbox.ApprovalRequest{Family: sandbox.FileTools, Tool: "write", Mode: sandbox.DangerFullAccess, Justification: "why", Target: "/x"}
	cases := []struct {
		name     string
		req      sandbox.ApprovalRequest
		decision string
	}{
		{"a credential read", read, "allow-once or allow-session: exactly this one read of this one file (nothing is allowed for the session); deny: refuse."},
		{"a command's credential read", command, "allow-once: exactly this one call under danger-full-access, with exactly what the question lists as readable (a directory's entries' names only); " +
			"allow-session: this call and the rest of the session under danger-full-access, until the connection ends, and the deny-read paths stay hidden from every one of them; deny: refuse."},
		{"a write", write, "allow-once: exactly this one call under danger-full-access; allow-session: this call and the rest of the session under danger-full-access, until the connection ends; deny: refuse."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mcpserver.Elicitation(c.req)
			assert.Equal(t, sandboxpolicy.Prompt(c.req), p.Message)
			schema, ok := p.RequestedSchema.(*jsonschema.Schema)
			require.True(t, ok)
			require.Contains(t, schema.Properties, "decision")
			assert.Equal(t, c.decision, schema.Properties["decision"].Description)
		})
	}
	assert.Contains(t, mcpserver.Elicitation(read).Message, "credential read")
	assert.Contains(t, mcpserver.Elicitation(command).Message, `readable for this one run: the directory "/home/u/.ssh/": the names of its entries only`)
}
