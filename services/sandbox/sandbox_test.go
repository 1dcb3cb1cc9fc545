package sandbox_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dsh-go/harness/services/sandbox"
)

func TestModes(t *testing.T) {
	t.Run("P-17 Modes lists read-only, workspace-write, danger-full-access in that order", func(t *testing.T) {
		assert.Equal(t, []sandbox.Mode{"read-only", "workspace-write", "danger-full-access"}, sandbox.Modes())
	})

	t.Run("P-17 the mode constants carry the wire spellings", func(t *testing.T) {
		assert.Equal(t, sandbox.Mode("read-only"), sandbox.ReadOnly)
		assert.Equal(t, sandbox.Mode("workspace-write"), sandbox.WorkspaceWrite)
		assert.Equal(t, sandbox.Mode("danger-full-access"), sandbox.DangerFullAccess)
	})

	t.Run("P-17 mutating the returned list does not change the next one", func(t *testing.T) {
		m := sandbox.Modes()
		m[0] = sandbox.DangerFullAccess
		assert.Equal(t, sandbox.ReadOnly, sandbox.Modes()[0])
	})
}

func TestModeValid(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		valid bool
	}{
		{name: "P-17 read-only is a mode", in: "read-only", valid: true},
		{name: "P-17 workspace-write is a mode", in: "workspace-write", valid: true},
		{name: "P-17 danger-full-access is a mode", in: "danger-full-access", valid: true},
		{name: "P-09 yolo is not a mode", in: "yolo"},
		{name: "P-20 host-root is not a mode", in: "host-root"},
		{name: "the empty string is not a mode", in: ""},
		{name: "spelling is case-sensitive", in: "Read-Only"},
		{name: "surrounding whitespace is not trimmed", in: " read-only"},
		{name: "underscore spelling is not accepted", in: "workspace_write"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := sandbox.Mode(tc.in)
			assert.Equal(t, tc.valid, m.Valid())
			assert.Equal(t, tc.in, m.String())
		})
	}
}
