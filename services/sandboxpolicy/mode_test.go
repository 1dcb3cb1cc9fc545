package sandboxpolicy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandboxpolicy"
)

func TestModes(t *testing.T) {
	t.Run("P-17 Modes lists read-only, workspace-write, danger-full-access in that order", func(t *testing.T) {
		assert.Equal(t, []sandboxpolicy.Mode{"read-only", "workspace-write", "danger-full-access"}, sandboxpolicy.Modes())
	})

	t.Run("P-17 the mode constants carry the wire spellings", func(t *testing.T) {
		assert.Equal(t, sandboxpolicy.Mode("read-only"), sandboxpolicy.ReadOnly)
		assert.Equal(t, sandboxpolicy.Mode("workspace-write"), sandboxpolicy.WorkspaceWrite)
		assert.Equal(t, sandboxpolicy.Mode("danger-full-access"), sandboxpolicy.DangerFullAccess)
	})

	t.Run("P-17 mutating the returned list does not change the next one", func(t *testing.T) {
		m := sandboxpolicy.Modes()
		m[0] = sandboxpolicy.DangerFullAccess
		assert.Equal(t, sandboxpolicy.ReadOnly, sandboxpolicy.Modes()[0])
	})
}

func TestModeValidAndParseMode(t *testing.T) {
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
			m := sandboxpolicy.Mode(tc.in)
			assert.Equal(t, tc.valid, m.Valid())
			assert.Equal(t, tc.in, m.String())

			got, err := sandboxpolicy.ParseMode(tc.in)
			if tc.valid {
				require.NoError(t, err)
				assert.Equal(t, m, got)
				return
			}
			require.Error(t, err)
			assert.Empty(t, got, "an unknown spelling never falls back to a default")
			assert.Contains(t, err.Error(), `"`+tc.in+`"`)
			assert.Contains(t, err.Error(), "read-only, workspace-write, danger-full-access")
		})
	}
}
