package guard_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// TestDenialHintsUnderACeiling: a denial under a mode its session may not
// widen (the policy's Ceiling, issue 26) says no escalation is available
// instead of inviting one the policy would refuse without asking; below
// the ceiling the escalation hint stays.
func TestDenialHintsUnderACeiling(t *testing.T) {
	ro, ww, danger := sandbox.ReadOnly, sandbox.WorkspaceWrite, sandbox.DangerFullAccess
	files, cmds := newGuard(t, sandbox.FileTools, true), newGuard(t, sandbox.Commands, true)
	pol := func(mode, ceiling sandbox.Mode) sandbox.ExecutionPolicy {
		return sandbox.ExecutionPolicy{Mode: mode, WorkspaceRoot: "/srv/ws", Ceiling: ceiling}
	}
	denied := &fs.Error{Code: fs.CodeSandboxDenied, Op: "write", Path: "/x", Message: "denied"}
	cases := []struct {
		name   string
		policy sandbox.ExecutionPolicy
		hint   string
	}{
		{name: "no ceiling: the escalation hint", policy: pol(ww, ""), hint: sandbox.EscalationHint(sandbox.SubjectOperation)},
		{name: "at a workspace-write ceiling: none available", policy: pol(ww, ww), hint: sandbox.CeilingHint(ww)},
		{name: "at a read-only ceiling: none available", policy: pol(ro, ro), hint: sandbox.CeilingHint(ro)},
		{name: "below the ceiling: the escalation hint", policy: pol(ro, ww), hint: sandbox.EscalationHint(sandbox.SubjectOperation)},
		{name: "under a danger-full-access ceiling: the escalation hint", policy: pol(ww, danger), hint: sandbox.EscalationHint(sandbox.SubjectOperation)},
	}
	for _, tc := range cases {
		t.Run("file denial, "+tc.name, func(t *testing.T) {
			res := files.Fail(denied, &tc.policy)
			assert.Equal(t, fs.CodeSandboxDenied, res.Code)
			assert.Equal(t, "Error: "+sandbox.DenialMarker(tc.policy.Mode)+"\n"+tc.hint, res.Text)
		})
	}

	t.Run("a command's denial and network denial at the ceiling", func(t *testing.T) {
		res := cmds.Denied(pol(ww, ww), "(inferred: ...)", "exit code 1")
		assert.Equal(t, "Error: "+sandbox.DenialMarker(ww)+"\n(inferred: ...)\n"+sandbox.CeilingHint(ww)+"\nexit code 1", res.Text)
		res = cmds.DeniedNetwork(pol(ww, ww), "(inferred: ...)", "")
		assert.Equal(t, guard.CodeNetworkDenied, res.Code)
		assert.Equal(t, "Error: "+sandbox.NetworkDenialMarker(ww)+"\n(inferred: ...)\n"+sandbox.CeilingHint(ww), res.Text)
	})

	t.Run("a read the deny-read set refused under a ceiling below danger-full-access", func(t *testing.T) {
		for _, c := range []sandbox.Mode{ro, ww} {
			res := files.DeniedRead(pol(c, c), "(refused)", "", true)
			assert.Equal(t, fs.CodeReadDenied, res.Code)
			assert.Equal(t, "Error: "+sandbox.ReadDenialMarker(c)+"\n(refused)\n"+
				"[sandbox: no escalation available — a read of a path in the deny-read set needs danger-full-access, beyond this session's widest mode "+string(c)+
				" (its principal's); it is refused without asking the user]", res.Text)
			assert.NotContains(t, res.Text, "retry")
		}
		res := files.DeniedRead(pol(ww, danger), "(refused)", "", true)
		assert.Contains(t, res.Text, "retry this exact operation once with sandbox_permissions=danger-full-access", "a danger-full-access ceiling may still ask")
	})

	t.Run("hosts the proxy refused under a read-only ceiling", func(t *testing.T) {
		pl, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: ww, WorkspaceRoot: "/srv/ws", TempRoots: []string{}})
		require.NoError(t, err)
		g, err := guard.New(guard.Config{Family: sandbox.Commands, Policy: pl, Confines: true, Hosts: true})
		require.NoError(t, err)
		refused := []exec.RefusedHost{{Host: "example.com", Port: 443, Reason: "not allowed"}}
		res := g.DeniedHosts(pol(ro, ro), refused, 0, "")
		assert.Equal(t, guard.CodeNetworkDenied, res.Code)
		assert.Contains(t, res.Text, "allow_hosts is refused without asking the user")
		assert.NotContains(t, res.Text, sandbox.HostsHint([]string{"example.com"}))
		res = g.DeniedHosts(pol(ww, ww), refused, 0, "")
		assert.Contains(t, res.Text, sandbox.HostsHint([]string{"example.com"}), "a workspace-write ceiling may ask for hosts")
	})
}

// TestDeniedHostsBounded: a network denial of a command the proxy refused
// 20,000 hosts names the first 20, counts the rest (with those the proxy
// itself counted), and its allow_hosts hint names at most
// sandboxpolicy.MaxHosts hosts, what one retry may ask for.
func TestDeniedHostsBounded(t *testing.T) {
	pl, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/srv/ws", TempRoots: []string{}})
	require.NoError(t, err)
	g, err := guard.New(guard.Config{Family: sandbox.Commands, Policy: pl, Confines: true, Hosts: true})
	require.NoError(t, err)
	ww := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/srv/ws"}
	tests := []struct {
		name  string
		hosts int
		more  int
		want  string
	}{
		{"two", 2, 0, ""},
		{"20,000", 20000, 0, "\n(and 19980 more refusals)"},
		{"the proxy's cap and its count", exec.MaxRefused, 100, "\n(and " + strconv.Itoa(exec.MaxRefused-20+100) + " more refusals)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refused := make([]exec.RefusedHost, tt.hosts)
			for i := range refused {
				refused[i] = exec.RefusedHost{Host: fmt.Sprintf("h%05d.test", i), Port: 443, Reason: "not allowed"}
			}
			res := g.DeniedHosts(ww, refused, tt.more, "out")
			assert.Equal(t, guard.CodeNetworkDenied, res.Code)
			assert.Equal(t, min(tt.hosts, 20), strings.Count(res.Text, "(the network proxy refused "))
			if tt.want != "" {
				assert.Contains(t, res.Text, tt.want)
			} else {
				assert.NotContains(t, res.Text, "more refusals")
			}
			hint := make([]string, min(tt.hosts, sandboxpolicy.MaxHosts))
			for i := range hint {
				hint[i] = refused[i].Host
			}
			assert.Contains(t, res.Text, sandbox.HostsHint(hint)+"\nout")
		})
	}
}

// BenchmarkDeniedHosts40000: the denial of a command the proxy refused
// 40,000 hosts (it built its text by repeated concatenation: about 30 s).
func BenchmarkDeniedHosts40000(b *testing.B) {
	g := newGuard(b, sandbox.Commands, true)
	refused := make([]exec.RefusedHost, 40000)
	for i := range refused {
		refused[i] = exec.RefusedHost{Host: fmt.Sprintf("h%05d.test", i), Port: 443, Reason: "not allowed"}
	}
	ww := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/srv/ws"}
	for b.Loop() {
		_ = g.DeniedHosts(ww, refused, 0, "")
	}
}

// TestDeniedHostsAtLookup: a host the namespace's name server refused
// (port 0) is rendered as refused at its name lookup, not "port 0".
func TestDeniedHostsAtLookup(t *testing.T) {
	pl, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/srv/ws", TempRoots: []string{}})
	require.NoError(t, err)
	g, err := guard.New(guard.Config{Family: sandbox.Commands, Policy: pl, Confines: true, Hosts: true})
	require.NoError(t, err)
	ww := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/srv/ws"}
	res := g.DeniedHosts(ww, []exec.RefusedHost{{Host: "evil.example", Reason: "not in --allow-domain (allowed: none)"}, {Host: "a.test", Port: 22, Reason: "r"}}, 0, "out")
	assert.Contains(t, res.Text, `(the network proxy refused "evil.example" (its name lookup): "not in --allow-domain (allowed: none)")`)
	assert.Contains(t, res.Text, `(the network proxy refused "a.test" port 22: "r")`)
	assert.Contains(t, res.Text, sandbox.HostsHint([]string{"evil.example", "a.test"}))
}
