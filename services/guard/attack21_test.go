package guard_test

// Attack round on issue 21. Each case failed before its fix.

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// TestAttack21AFamilylessGrantCoversNoFamily: guard.New accepts a Config
// without a Family, and sandboxpolicy.Escalate records an "allow for the
// session" under req.Family as given; a grant recorded with Family ""
// covers every family (modeEvent.covers treats "" as SetMode's "every
// family"). So a new tool family built on the guard that forgets its
// Family (the package doc invites new families) turns a grant answered to
// its prompt into a grant for exec as well: fail open. Either New refuses
// an empty family or Escalate refuses to record one. failed before its fix.
func TestAttack21AFamilylessGrantCoversNoFamily(t *testing.T) {
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.ReadOnly, WorkspaceRoot: "/srv/ws", TempRoots: []string{}})
	require.NoError(t, err)
	_, err = guard.New(guard.Config{Policy: pol, Confines: true})
	assert.Error(t, err, "a guard without a family was built")

	sess := session.New("s", "/srv/ws")
	allow := sandbox.ApproverFunc(func(context.Context, sandbox.ApprovalRequest) (sandbox.Outcome, error) {
		return sandbox.AllowedForSession, nil
	})
	_, err = sandboxpolicy.Escalate(context.Background(), allow, sess,
		sandbox.ApprovalRequest{Mode: sandbox.DangerFullAccess, Justification: "j"}, sandbox.ReadOnly)
	t.Log("Escalate with no family:", err)
	assert.Equal(t, sandbox.ReadOnly, pol.Resolve(sess, sandbox.Commands, "").Mode,
		"a grant recorded without a family widened the commands")
}
