package config_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
)

func TestStateDirAndAuditLogDefault(t *testing.T) {
	tests := []struct {
		name      string
		vars      map[string]string
		args      []string
		wantState string
		wantLog   string // Config.AuditLogPath after loading
	}{
		{"XDG_STATE_HOME wins", map[string]string{"XDG_STATE_HOME": "/s", "HOME": "/h"}, nil, "/s/harness", "/s/harness/audit.jsonl"},
		{"else HOME", map[string]string{"HOME": "/h"}, nil, "/h/.local/state/harness", "/h/.local/state/harness/audit.jsonl"},
		{"a relative XDG_STATE_HOME is ignored", map[string]string{"XDG_STATE_HOME": "rel", "HOME": "/h"}, nil, "/h/.local/state/harness", "/h/.local/state/harness/audit.jsonl"},
		{"no state directory: no audit log", map[string]string{"HOME": "rel"}, nil, "", ""},
		{"off", map[string]string{"HOME": "/h"}, []string{"--audit-log", "off"}, "/h/.local/state/harness", ""},
		{"HARNESS_AUDIT_LOG off", map[string]string{"HOME": "/h", "HARNESS_AUDIT_LOG": "off"}, nil, "/h/.local/state/harness", ""},
		{"a relative file is made absolute", map[string]string{"HOME": "/h"}, []string{"--audit-log", "a.jsonl"}, "/h/.local/state/harness", abs(t, "a.jsonl")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantState, config.StateDir(envOf(tt.vars)))
			assert.Equal(t, tt.wantLog, mustLoad(t, tt.args, tt.vars).AuditLogPath())
		})
	}
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAuditMaxBytesRefusesNegative(t *testing.T) {
	_, err := load(t, []string{"--audit-max-bytes", "-1"}, nil)
	assert.ErrorContains(t, err, "--audit-max-bytes: must be a positive integer (0 means the default), got -1")
	_, err = load(t, nil, map[string]string{"HARNESS_AUDIT_MAX_BYTES": "big"})
	assert.ErrorContains(t, err, `HARNESS_AUDIT_MAX_BYTES: not an integer: "big"`)
}
