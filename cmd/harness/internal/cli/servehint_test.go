package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeHintCarriesFlags checks the client configuration serve prints on
// a terminal: it parses as JSON and its args start this same server from any
// directory, the flags as given with the workspace and config made absolute.
func TestServeHintCarriesFlags(t *testing.T) {
	l := newLayout(t)
	odd := filepath.Join(l.base, `sp ace "q" \b`)
	require.NoError(t, os.Mkdir(odd, 0o755))
	cfgFile := filepath.Join(l.ws, "h.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("mode: read-only\n"), 0o644))
	tests := []struct {
		name string
		dir  string
		args []string
		env  map[string]string
		want func(l layout) []string
	}{
		{
			name: "workspace and mode as separate values",
			args: []string{"--workspace", l.ws, "--mode", "workspace-write"},
			want: func(l layout) []string { return []string{"serve", "--workspace", l.ws, "--mode", "workspace-write"} },
		},
		{
			name: "a relative workspace, = forms and other flags",
			dir:  l.base,
			args: []string{"--workspace=ws", "--mode=read-only", "--network", "deny", "--deny-read=*.pem", "--shared-temp", "--read-limit", "7"},
			want: func(l layout) []string {
				return []string{"serve", "--workspace=" + l.ws, "--mode=read-only", "--network", "deny", "--deny-read=*.pem", "--shared-temp", "--read-limit", "7"}
			},
		},
		{
			name: "a workspace with quotes, spaces and backslashes",
			args: []string{"-workspace", odd, "--exec", "off"},
			want: func(l layout) []string { return []string{"serve", "-workspace", odd, "--exec", "off"} },
		},
		{
			name: "a relative config file",
			dir:  l.ws,
			args: []string{"--config", "h.yaml", "--workspace", "."},
			want: func(l layout) []string { return []string{"serve", "--config", cfgFile, "--workspace", l.ws} },
		},
		{
			name: "a workspace from the environment is added",
			env:  map[string]string{"HARNESS_WORKSPACE": l.ws},
			args: []string{"--mode", "workspace-write"},
			want: func(l layout) []string { return []string{"serve", "--mode", "workspace-write", "--workspace", l.ws} },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.dir != "" {
				t.Chdir(tc.dir)
			}
			r := runCLI(t, append([]string{"serve"}, tc.args...), "", true, tc.env)
			require.Equal(t, 0, r.code, r.stderr)
			var line string
			for ln := range strings.Lines(r.stderr) {
				if strings.Contains(ln, "mcpServers") {
					line = strings.TrimSpace(ln)
				}
			}
			require.NotEmpty(t, line, r.stderr)
			var cfg struct {
				MCPServers map[string]struct {
					Command string   `json:"command"`
					Args    []string `json:"args"`
				} `json:"mcpServers"`
			}
			require.NoError(t, json.Unmarshal([]byte(line), &cfg), line)
			assert.NotEmpty(t, cfg.MCPServers["harness"].Command)
			assert.Equal(t, tc.want(l), cfg.MCPServers["harness"].Args)
		})
	}
}
