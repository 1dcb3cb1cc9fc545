package config_test

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
)

// envOf returns a getenv that knows only vars: nothing leaks from the real
// environment.
func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// load parses args with a fresh flag set and loads the configuration.
func load(t *testing.T, args []string, vars map[string]string) (config.Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	loader := config.Flags(fs, envOf(vars), config.HTTPFlags)
	require.NoError(t, fs.Parse(args))
	return loader()
}

// mustLoad is load that requires success.
func mustLoad(t *testing.T, args []string, vars map[string]string) config.Config {
	t.Helper()
	cfg, err := load(t, args, vars)
	require.NoError(t, err)
	return cfg
}

// writeYAML writes text to a fresh config file and returns its path.
func writeYAML(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "harness.yaml")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

func TestDefault(t *testing.T) {
	t.Run("Default is sandbox, read-only, Landlock auto, exec sandbox with network and Unix sockets denied, full durability, the workspace owner, info, console and nothing else", func(t *testing.T) {
		assert.Equal(t, config.Config{
			FS: "sandbox", Mode: "read-only", Landlock: "auto", VCS: "commit", Exec: "sandbox", ExecIsolation: "bwrap", Network: "deny", UnixSockets: "deny",
			Durability: "full", WorkspaceOwner: true, JournalMaxBytes: 1 << 30, LogLevel: "info", LogFormat: "console",
		}, config.Default())
	})

	t.Run("Default validates", func(t *testing.T) {
		cfg := config.Default()
		require.NoError(t, cfg.Validate())
		assert.Equal(t, config.Default(), cfg, "validating the defaults changes nothing")
	})

	t.Run("no flags, no variables and no file load the defaults", func(t *testing.T) {
		assert.Equal(t, config.Default(), mustLoad(t, nil, nil))
	})

	t.Run("empty variables are ignored", func(t *testing.T) {
		vars := map[string]string{}
		for _, name := range []string{
			"CONFIG", "FS", "MODE", "WORKSPACE", "TEMP_ROOT", "READ_LIMIT", "READ_MAX_LINE_LENGTH",
			"READ_MAX_BYTES", "READ_STREAM_MIN_SIZE", "LIST_LIMIT", "INVARIANTS", "LOG_LEVEL", "LOG_FORMAT",
			"DURABILITY", "WORKSPACE_OWNER", "TOOLCHAIN_CACHES", "DENY_READ", "ALLOW_READ", "JOURNAL_MAX_BYTES",
			"JOURNAL_COMMANDS",
		} {
			vars[config.EnvPrefix+name] = ""
		}
		assert.Equal(t, config.Default(), mustLoad(t, nil, vars))
	})

	t.Run("the allowed value lists", func(t *testing.T) {
		assert.Equal(t, []string{"sandbox", "local"}, config.Backends)
		assert.Equal(t, []string{"trace", "debug", "info", "warn", "error"}, config.LogLevels)
		assert.Equal(t, []string{"json", "console"}, config.LogFormats)
		assert.Equal(t, []string{"full", "atomic"}, config.Durabilities())
		assert.Equal(t, "HARNESS_", config.EnvPrefix)
	})
}

// layer is one field's value at each precedence level.
type layer struct {
	yaml string    // the YAML line(s) setting the field
	env  [2]string // variable name (without prefix) and value
	args []string  // the flags setting the field
}

func TestPrecedence(t *testing.T) {
	fields := []struct {
		name  string
		set   layer
		get   func(config.Config) any
		wants [4]any // default, YAML, env, flag
	}{
		{
			name:  "fs",
			set:   layer{yaml: "fs: local", env: [2]string{"FS", "sandbox"}, args: []string{"--fs", "local"}},
			get:   func(c config.Config) any { return c.FS },
			wants: [4]any{"sandbox", "local", "sandbox", "local"},
		},
		{
			name:  "mode",
			set:   layer{yaml: "mode: workspace-write", env: [2]string{"MODE", "danger-full-access"}, args: []string{"--mode", "read-only"}},
			get:   func(c config.Config) any { return c.Mode },
			wants: [4]any{"read-only", "workspace-write", "danger-full-access", "read-only"},
		},
		{
			name:  "workspace",
			set:   layer{yaml: "workspace: /from/yaml", env: [2]string{"WORKSPACE", "/from/env"}, args: []string{"--workspace", "/from/flag"}},
			get:   func(c config.Config) any { return c.Workspace },
			wants: [4]any{"", "/from/yaml", "/from/env", "/from/flag"},
		},
		{
			name:  "landlock",
			set:   layer{yaml: "landlock: \"off\"", env: [2]string{"LANDLOCK", "auto"}, args: []string{"--landlock", "off"}},
			get:   func(c config.Config) any { return c.Landlock },
			wants: [4]any{"auto", "off", "auto", "off"},
		},
		{
			name:  "vcs",
			set:   layer{yaml: "vcs: read-only", env: [2]string{"VCS", "commit"}, args: []string{"--vcs", "read-only"}},
			get:   func(c config.Config) any { return c.VCS },
			wants: [4]any{"commit", "read-only", "commit", "read-only"},
		},
		{
			name:  "unprotect",
			set:   layer{yaml: "unprotect: [.vscode]", env: [2]string{"UNPROTECT", ".idea\n.envrc"}, args: []string{"--unprotect", ".mcp.json"}},
			get:   func(c config.Config) any { return c.Unprotect },
			wants: [4]any{[]string(nil), []string{".vscode"}, []string{".idea", ".envrc"}, []string{".mcp.json"}},
		},
		{
			name:  "allow-domain",
			set:   layer{yaml: "allow-domain: [registry.npmjs.org]", env: [2]string{"ALLOW_DOMAIN", "github.com, *.githubusercontent.com"}, args: []string{"--allow-domain", "proxy.golang.org", "--allow-domain", "*.example.com"}},
			get:   func(c config.Config) any { return c.AllowDomains },
			wants: [4]any{[]string(nil), []string{"registry.npmjs.org"}, []string{"github.com", "*.githubusercontent.com"}, []string{"proxy.golang.org", "*.example.com"}},
		},
		{
			name:  "protect",
			set:   layer{yaml: "protect: [a/]", env: [2]string{"PROTECT", "b/\n*.key"}, args: []string{"--protect", "c/", "--protect", "d/"}},
			get:   func(c config.Config) any { return c.Protect },
			wants: [4]any{[]string(nil), []string{"a/"}, []string{"b/", "*.key"}, []string{"c/", "d/"}},
		},
		{
			name:  "deny-read",
			set:   layer{yaml: "deny-read: [\"*.pem\"]", env: [2]string{"DENY_READ", "~/secrets\n/srv/keys/"}, args: []string{"--deny-read", "id_*", "--deny-read", "!id_*.pub"}},
			get:   func(c config.Config) any { return c.DenyRead },
			wants: [4]any{[]string(nil), []string{"*.pem"}, []string{"~/secrets", "/srv/keys/"}, []string{"id_*", "!id_*.pub"}},
		},
		{
			name:  "allow-read",
			set:   layer{yaml: "allow-read: [~/.npmrc]", env: [2]string{"ALLOW_READ", ".env\n.env.*"}, args: []string{"--allow-read", "~/.cargo/credentials*"}},
			get:   func(c config.Config) any { return c.AllowRead },
			wants: [4]any{[]string(nil), []string{"~/.npmrc"}, []string{".env", ".env.*"}, []string{"~/.cargo/credentials*"}},
		},
		{
			name: "temp-root",
			set: layer{
				yaml: "temp-root:\n  - /yaml/t1\n  - /yaml/t2",
				env:  [2]string{"TEMP_ROOT", "/env/t1" + string(os.PathListSeparator) + "/env/t2" + string(os.PathListSeparator) + "/env/t3"},
				args: []string{"--temp-root", "/flag/t1", "--temp-root", "/flag/t2"},
			},
			get: func(c config.Config) any { return c.TempRoots },
			wants: [4]any{
				[]string(nil),
				[]string{"/yaml/t1", "/yaml/t2"},
				[]string{"/env/t1", "/env/t2", "/env/t3"},
				[]string{"/flag/t1", "/flag/t2"},
			},
		},
		{
			name:  "read-limit",
			set:   layer{yaml: "read-limit: 10", env: [2]string{"READ_LIMIT", "20"}, args: []string{"--read-limit", "30"}},
			get:   func(c config.Config) any { return c.ReadLimit },
			wants: [4]any{0, 10, 20, 30},
		},
		{
			name:  "read-max-line-length",
			set:   layer{yaml: "read-max-line-length: 11", env: [2]string{"READ_MAX_LINE_LENGTH", "21"}, args: []string{"--read-max-line-length", "31"}},
			get:   func(c config.Config) any { return c.ReadMaxLineLength },
			wants: [4]any{0, 11, 21, 31},
		},
		{
			name:  "read-max-bytes",
			set:   layer{yaml: "read-max-bytes: 12", env: [2]string{"READ_MAX_BYTES", "22"}, args: []string{"--read-max-bytes", "32"}},
			get:   func(c config.Config) any { return c.ReadMaxBytes },
			wants: [4]any{0, 12, 22, 32},
		},
		{
			name: "read-stream-min-size",
			set: layer{
				yaml: "read-stream-min-size: 8589934592", env: [2]string{"READ_STREAM_MIN_SIZE", "17179869184"},
				args: []string{"--read-stream-min-size", "34359738368"},
			},
			get:   func(c config.Config) any { return c.ReadStreamMinSize },
			wants: [4]any{int64(0), int64(8 << 30), int64(16 << 30), int64(32 << 30)},
		},
		{
			name: "journal-max-bytes",
			set: layer{
				yaml: "journal-max-bytes: 1048576", env: [2]string{"JOURNAL_MAX_BYTES", "0"},
				args: []string{"--journal-max-bytes", "4096"},
			},
			get:   func(c config.Config) any { return c.JournalMaxBytes },
			wants: [4]any{int64(1 << 30), int64(1 << 20), int64(0), int64(4096)},
		},
		{
			name:  "audit-log",
			set:   layer{yaml: "audit-log: /yaml/audit.jsonl", env: [2]string{"AUDIT_LOG", "off"}, args: []string{"--audit-log", "/flag/audit.jsonl"}},
			get:   func(c config.Config) any { return c.AuditLog },
			wants: [4]any{"", "/yaml/audit.jsonl", "off", "/flag/audit.jsonl"},
		},
		{
			name:  "audit-max-bytes",
			set:   layer{yaml: "audit-max-bytes: 1024", env: [2]string{"AUDIT_MAX_BYTES", "2048"}, args: []string{"--audit-max-bytes", "4096"}},
			get:   func(c config.Config) any { return c.AuditMaxBytes },
			wants: [4]any{int64(0), int64(1024), int64(2048), int64(4096)},
		},
		{
			name:  "list-limit",
			set:   layer{yaml: "list-limit: 13", env: [2]string{"LIST_LIMIT", "23"}, args: []string{"--list-limit", "33"}},
			get:   func(c config.Config) any { return c.ListLimit },
			wants: [4]any{0, 13, 23, 33},
		},
		{
			name:  "max-concurrent-calls",
			set:   layer{yaml: "max-concurrent-calls: 3", env: [2]string{"MAX_CONCURRENT_CALLS", "5"}, args: []string{"--max-concurrent-calls", "7"}},
			get:   func(c config.Config) any { return c.MaxConcurrentCalls },
			wants: [4]any{0, 3, 5, 7},
		},
		{
			name:  "max-waiting-calls",
			set:   layer{yaml: "max-waiting-calls: 30", env: [2]string{"MAX_WAITING_CALLS", "50"}, args: []string{"--max-waiting-calls", "70"}},
			get:   func(c config.Config) any { return c.MaxWaitingCalls },
			wants: [4]any{0, 30, 50, 70},
		},
		{
			name:  "call-wait",
			set:   layer{yaml: "call-wait: 10s", env: [2]string{"CALL_WAIT", "1m"}, args: []string{"--call-wait", "2m"}},
			get:   func(c config.Config) any { return c.CallWait },
			wants: [4]any{time.Duration(0), 10 * time.Second, time.Minute, 2 * time.Minute},
		},
		{
			name:  "invariants",
			set:   layer{yaml: "invariants: true", env: [2]string{"INVARIANTS", "false"}, args: []string{"--invariants"}},
			get:   func(c config.Config) any { return c.Invariants },
			wants: [4]any{false, true, false, true},
		},
		{
			name:  "durability",
			set:   layer{yaml: "durability: atomic", env: [2]string{"DURABILITY", "full"}, args: []string{"--durability", "atomic"}},
			get:   func(c config.Config) any { return c.Durability },
			wants: [4]any{"full", "atomic", "full", "atomic"},
		},
		{
			name:  "toolchain-caches",
			set:   layer{yaml: "toolchain-caches: true", env: [2]string{"TOOLCHAIN_CACHES", "false"}, args: []string{"--toolchain-caches"}},
			get:   func(c config.Config) any { return c.ToolchainCaches },
			wants: [4]any{false, true, false, true},
		},
		{
			name:  "shared-temp",
			set:   layer{yaml: "shared-temp: true", env: [2]string{"SHARED_TEMP", "false"}, args: []string{"--shared-temp"}},
			get:   func(c config.Config) any { return c.SharedTemp },
			wants: [4]any{false, true, false, true},
		},
		{
			name:  "journal-commands",
			set:   layer{yaml: "journal-commands: true", env: [2]string{"JOURNAL_COMMANDS", "false"}, args: []string{"--journal-commands"}},
			get:   func(c config.Config) any { return c.JournalCommands },
			wants: [4]any{false, true, false, true},
		},
		{
			name:  "gpg-agent",
			set:   layer{yaml: "gpg-agent: true", env: [2]string{"GPG_AGENT", "false"}, args: []string{"--gpg-agent"}},
			get:   func(c config.Config) any { return c.GPGAgent },
			wants: [4]any{false, true, false, true},
		},
		{
			name:  "workspace-owner",
			set:   layer{yaml: "workspace-owner: false", env: [2]string{"WORKSPACE_OWNER", "true"}, args: []string{"--workspace-owner=false"}},
			get:   func(c config.Config) any { return c.WorkspaceOwner },
			wants: [4]any{true, false, true, false},
		},
		{
			name:  "log-level",
			set:   layer{yaml: "log-level: debug", env: [2]string{"LOG_LEVEL", "warn"}, args: []string{"--log-level", "error"}},
			get:   func(c config.Config) any { return c.LogLevel },
			wants: [4]any{"info", "debug", "warn", "error"},
		},
		{
			name:  "log-format",
			set:   layer{yaml: "log-format: json", env: [2]string{"LOG_FORMAT", "console"}, args: []string{"--log-format", "json"}},
			get:   func(c config.Config) any { return c.LogFormat },
			wants: [4]any{"console", "json", "console", "json"},
		},
	}
	for _, f := range fields {
		t.Run(f.name, func(t *testing.T) {
			file := writeYAML(t, f.set.yaml+"\n")
			env := map[string]string{config.EnvPrefix + f.set.env[0]: f.set.env[1]}
			withFile := func(args ...string) []string { return append([]string{"--config", file}, args...) }
			withEnv := func(extra map[string]string) map[string]string {
				out := map[string]string{}
				for k, v := range env {
					out[k] = v
				}
				for k, v := range extra {
					out[k] = v
				}
				return out
			}

			t.Run("default", func(t *testing.T) {
				assert.Equal(t, f.wants[0], f.get(mustLoad(t, nil, nil)))
			})
			t.Run("YAML beats the default", func(t *testing.T) {
				assert.Equal(t, f.wants[1], f.get(mustLoad(t, withFile(), nil)))
			})
			t.Run("the variable beats the default", func(t *testing.T) {
				assert.Equal(t, f.wants[2], f.get(mustLoad(t, nil, env)))
			})
			t.Run("the flag beats the default", func(t *testing.T) {
				assert.Equal(t, f.wants[3], f.get(mustLoad(t, f.set.args, nil)))
			})
			t.Run("the variable beats YAML", func(t *testing.T) {
				assert.Equal(t, f.wants[2], f.get(mustLoad(t, withFile(), env)))
			})
			t.Run("the flag beats YAML", func(t *testing.T) {
				assert.Equal(t, f.wants[3], f.get(mustLoad(t, withFile(f.set.args...), nil)))
			})
			t.Run("the flag beats the variable", func(t *testing.T) {
				assert.Equal(t, f.wants[3], f.get(mustLoad(t, f.set.args, env)))
			})
			t.Run("the flag beats the variable and YAML", func(t *testing.T) {
				assert.Equal(t, f.wants[3], f.get(mustLoad(t, withFile(f.set.args...), env)))
			})
			t.Run("HARNESS_CONFIG names the file when --config is not given", func(t *testing.T) {
				assert.Equal(t, f.wants[1], f.get(mustLoad(t, nil, map[string]string{config.EnvPrefix + "CONFIG": file})))
				assert.Equal(t, f.wants[2], f.get(mustLoad(t, nil, withEnv(map[string]string{config.EnvPrefix + "CONFIG": file}))))
			})
		})
	}

	t.Run("a flag set to its default value still beats the variable and YAML", func(t *testing.T) {
		file := writeYAML(t, "mode: workspace-write\nfs: local\nlog-level: debug\ninvariants: true\n")
		cfg := mustLoad(t,
			[]string{"--config", file, "--mode", "read-only", "--fs", "sandbox", "--log-level", "info", "--invariants=false"},
			map[string]string{"HARNESS_MODE": "danger-full-access", "HARNESS_LOG_LEVEL": "warn"})
		assert.Equal(t, "read-only", cfg.Mode)
		assert.Equal(t, "sandbox", cfg.FS)
		assert.Equal(t, "info", cfg.LogLevel)
		assert.False(t, cfg.Invariants)
	})

	t.Run("--config beats HARNESS_CONFIG", func(t *testing.T) {
		flagFile := writeYAML(t, "mode: danger-full-access\n")
		envFile := writeYAML(t, "mode: workspace-write\n")
		cfg := mustLoad(t, []string{"--config", flagFile}, map[string]string{"HARNESS_CONFIG": envFile})
		assert.Equal(t, "danger-full-access", cfg.Mode)
	})

	t.Run("layers merge field by field: what a higher layer does not set comes from below", func(t *testing.T) {
		file := writeYAML(t, "fs: local\nmode: workspace-write\nread-limit: 5\nlog-format: json\n")
		cfg := mustLoad(t, []string{"--config", file, "--read-limit", "7"}, map[string]string{"HARNESS_MODE": "danger-full-access"})
		assert.Equal(t, config.Config{
			ConfigFile: file,
			FS:         "local", Mode: "danger-full-access", Landlock: "auto", VCS: "commit", Exec: "sandbox", ExecIsolation: "bwrap", Network: "deny", UnixSockets: "deny", ReadLimit: 7,
			Durability: "full", WorkspaceOwner: true, JournalMaxBytes: 1 << 30, LogLevel: "info", LogFormat: "json",
		}, cfg)
	})

	t.Run("a whole YAML file with every key loads every field", func(t *testing.T) {
		file := writeYAML(t, `fs: local
mode: danger-full-access
workspace: /w
temp-root: [/t1, /t2]
landlock: "off"
protect: ["*.pem", secrets/]
unprotect: [.vscode]
deny-read: ["*.key", ~/work-secrets]
allow-read: [~/.npmrc, .env]
vcs: read-only
read-limit: 1
read-max-line-length: 2
read-max-bytes: 3
read-stream-min-size: 4
list-limit: 5
invariants: true
durability: atomic
workspace-owner: false
journal-max-bytes: 65536
log-level: error
log-format: json
`)
		assert.Equal(t, config.Config{
			ConfigFile: file, Unprotect: []string{".vscode"}, VCS: "read-only",
			DenyRead: []string{"*.key", "~/work-secrets"}, AllowRead: []string{"~/.npmrc", ".env"},
			FS: "local", Mode: "danger-full-access", Exec: "sandbox", ExecIsolation: "bwrap", Network: "deny", UnixSockets: "deny", Workspace: "/w", TempRoots: []string{"/t1", "/t2"}, Landlock: "off", Protect: []string{"*.pem", "secrets/"},
			ReadLimit: 1, ReadMaxLineLength: 2, ReadMaxBytes: 3, ReadStreamMinSize: 4, ListLimit: 5,
			Invariants: true, Durability: "atomic", JournalMaxBytes: 64 << 10, LogLevel: "error", LogFormat: "json",
		}, mustLoad(t, []string{"--config", file}, nil))
	})

	t.Run("an empty YAML file changes nothing but naming itself", func(t *testing.T) {
		want, file := config.Default(), writeYAML(t, "")
		want.ConfigFile = file
		assert.Equal(t, want, mustLoad(t, []string{"--config", file}, nil))
	})

	t.Run("a YAML file of only comments changes nothing but naming itself", func(t *testing.T) {
		want, file := config.Default(), writeYAML(t, "# nothing here\n")
		want.ConfigFile = file
		assert.Equal(t, want, mustLoad(t, []string{"--config", file}, nil))
	})
}

func TestStrictYAML(t *testing.T) {
	tests := []struct {
		name   string
		yaml   string
		wantIn []string
	}{
		{name: "an unknown key fails naming it", yaml: "mode: read-only\nmdoe: workspace-write\n", wantIn: []string{"harness.yaml:2: unknown key \"mdoe\" (did you mean \"mode\"?)", "--config"}},
		{name: "an unknown key far from every key has no suggestion", yaml: "frobnicate: blue\n", wantIn: []string{`unknown key "frobnicate"; the keys are the flag names`}},
		{name: "a Go field name is not a key", yaml: "ReadLimit: 3\n", wantIn: []string{"ReadLimit"}},
		{name: "a snake_case spelling is not a key", yaml: "read_limit: 3\n", wantIn: []string{"read_limit"}},
		{name: "the env spelling is not a key", yaml: "temp_root: [/t]\n", wantIn: []string{"temp_root"}},
		{name: "--config itself is not a key", yaml: "config: other.yaml\n", wantIn: []string{"config"}},
		{name: "a nested unknown key fails", yaml: "fs: local\nextra:\n  a: 1\n", wantIn: []string{"extra"}},
		{name: "a wrong type fails naming the file and key", yaml: "fs: local\nread-limit: many\n", wantIn: []string{"--config", "harness.yaml:2: key \"read-limit\" wants a whole number, got \"many\""}},
		{name: "a scalar temp-root fails (it is a list)", yaml: "temp-root: /t\n", wantIn: []string{"harness.yaml:1: key \"temp-root\" wants a list of strings, such as [/a, /b], got \"/t\""}},
		{name: "a boolean key wants true or false", yaml: "fs: local\n\ninvariants: maybe\n", wantIn: []string{"harness.yaml:3: key \"invariants\" wants true or false, got \"maybe\""}},
		{name: "a string key does not take a list", yaml: "fs: [a]\n", wantIn: []string{"harness.yaml:1: key \"fs\" wants a string, got a list"}},
		{name: "a duration wants its unit", yaml: "roots-timeout: 5\n", wantIn: []string{"harness.yaml:1: key \"roots-timeout\" wants a duration with its unit, such as 30s, 2m or 500ms, got \"5\""}},
		{name: "malformed YAML fails", yaml: "mode: [read-only\n", wantIn: []string{"--config", "harness.yaml:1: not valid YAML: did not find expected"}},
		{name: "a top-level list fails", yaml: "- fs\n", wantIn: []string{"--config"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := writeYAML(t, tc.yaml)
			_, err := load(t, []string{"--config", file}, nil)
			require.Error(t, err)
			for _, s := range tc.wantIn {
				assert.Contains(t, err.Error(), s)
			}
		})
	}

	t.Run("a missing file fails naming --config", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "missing.yaml")
		_, err := load(t, []string{"--config", missing}, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "--config")
		assert.Contains(t, err.Error(), "missing.yaml")
	})

	t.Run("a missing file named by HARNESS_CONFIG fails naming --config", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "missing.yaml")
		_, err := load(t, nil, map[string]string{"HARNESS_CONFIG": missing})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "--config")
	})

	t.Run("a YAML value is validated like a flag", func(t *testing.T) {
		_, err := load(t, []string{"--config", writeYAML(t, "mode: yolo\n")}, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "harness.yaml:1: key \"mode\": ")
		assert.NotContains(t, err.Error(), "not found in type")
		assert.Contains(t, err.Error(), `"yolo"`)
	})
}

func TestBadValues(t *testing.T) {
	const modes = "read-only, workspace-write, danger-full-access"
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		yaml   string
		wantIn []string
		// wantNot are substrings the error must not contain (another
		// source than the value's).
		wantNot []string
	}{
		{name: "--fs", args: []string{"--fs", "zfs"}, wantIn: []string{"--fs", `"zfs"`, "sandbox, local"}},
		{name: "--fs is case-sensitive", args: []string{"--fs", "Sandbox"}, wantIn: []string{"--fs", `"Sandbox"`, "sandbox, local"}},
		{name: "--fs empty", args: []string{"--fs", ""}, wantIn: []string{"--fs", `""`, "sandbox, local"}},
		{name: "--mode", args: []string{"--mode", "yolo"}, wantIn: []string{"--mode", `"yolo"`, modes}},
		{name: "--mode empty", args: []string{"--mode", ""}, wantIn: []string{"--mode", `""`, modes}},
		{name: "--log-level", args: []string{"--log-level", "verbose"}, wantIn: []string{"--log-level", `"verbose"`, "trace, debug, info, warn, error"}},
		{name: "--log-level warning is not an alias", args: []string{"--log-level", "warning"}, wantIn: []string{"--log-level", "trace, debug, info, warn, error"}},
		{name: "--log-format", args: []string{"--log-format", "xml"}, wantIn: []string{"--log-format", `"xml"`, "json, console"}},
		{name: "negative --read-limit", args: []string{"--read-limit", "-1"}, wantIn: []string{"--read-limit", "-1"}},
		{name: "negative --read-max-line-length", args: []string{"--read-max-line-length", "-2"}, wantIn: []string{"--read-max-line-length", "-2"}},
		{name: "negative --read-max-bytes", args: []string{"--read-max-bytes", "-3"}, wantIn: []string{"--read-max-bytes", "-3"}},
		{name: "negative --read-stream-min-size", args: []string{"--read-stream-min-size", "-4"}, wantIn: []string{"--read-stream-min-size", "-4"}},
		{name: "negative --journal-max-bytes", args: []string{"--journal-max-bytes", "-1"}, wantIn: []string{"--journal-max-bytes", "-1"}},
		{name: "HARNESS_JOURNAL_MAX_BYTES", env: map[string]string{"HARNESS_JOURNAL_MAX_BYTES": "1G"}, wantIn: []string{"HARNESS_JOURNAL_MAX_BYTES", `"1G"`}},
		{name: "negative --list-limit", args: []string{"--list-limit", "-5"}, wantIn: []string{"--list-limit", "-5"}},
		{name: "negative --max-concurrent-calls", args: []string{"--max-concurrent-calls", "-1"}, wantIn: []string{"--max-concurrent-calls", "-1"}},
		{name: "negative --max-waiting-calls", args: []string{"--max-waiting-calls", "-1"}, wantIn: []string{"--max-waiting-calls", "-1"}},
		{name: "negative --call-wait", args: []string{"--call-wait", "-1s"}, wantIn: []string{"--call-wait"}},
		{name: "an empty --temp-root", args: []string{"--temp-root", ""}, wantIn: []string{"--temp-root"}},
		{name: "a blank --temp-root among good ones", args: []string{"--temp-root", "/t", "--temp-root", "  "}, wantIn: []string{"--temp-root"}},
		{name: "HARNESS_MODE names the variable, not the flag", env: map[string]string{"HARNESS_MODE": "yolo"}, wantIn: []string{"HARNESS_MODE: ", `"yolo"`, modes}, wantNot: []string{"--mode"}},
		{name: "HARNESS_MODE bogus", env: map[string]string{"HARNESS_MODE": "bogus"}, wantIn: []string{"HARNESS_MODE: ", `"bogus"`}, wantNot: []string{"--mode"}},
		{name: "a near miss gets a did-you-mean", args: []string{"--mode", "workspace_write"}, wantIn: []string{"--mode: ", `did you mean "workspace-write"?`}},
		{name: "HARNESS_FS", env: map[string]string{"HARNESS_FS": "nfs"}, wantIn: []string{"HARNESS_FS: ", `"nfs"`, "sandbox, local"}, wantNot: []string{"--fs"}},
		{name: "HARNESS_LOG_LEVEL", env: map[string]string{"HARNESS_LOG_LEVEL": "verbose"}, wantIn: []string{"HARNESS_LOG_LEVEL: ", "trace, debug, info, warn, error"}, wantNot: []string{"--log-level"}},
		{name: "HARNESS_LOG_FORMAT", env: map[string]string{"HARNESS_LOG_FORMAT": "text"}, wantIn: []string{"HARNESS_LOG_FORMAT: ", "json, console"}, wantNot: []string{"--log-format"}},
		{name: "HARNESS_READ_LIMIT not an integer", env: map[string]string{"HARNESS_READ_LIMIT": "ten"}, wantIn: []string{"HARNESS_READ_LIMIT", `"ten"`}},
		{name: "HARNESS_READ_LIMIT a float", env: map[string]string{"HARNESS_READ_LIMIT": "1.5"}, wantIn: []string{"HARNESS_READ_LIMIT", `"1.5"`}},
		{name: "HARNESS_READ_LIMIT negative", env: map[string]string{"HARNESS_READ_LIMIT": "-1"}, wantIn: []string{"HARNESS_READ_LIMIT: ", "-1"}, wantNot: []string{"--read-limit"}},
		{name: "HARNESS_READ_MAX_LINE_LENGTH", env: map[string]string{"HARNESS_READ_MAX_LINE_LENGTH": "x"}, wantIn: []string{"HARNESS_READ_MAX_LINE_LENGTH", `"x"`}},
		{name: "HARNESS_READ_MAX_BYTES", env: map[string]string{"HARNESS_READ_MAX_BYTES": "x"}, wantIn: []string{"HARNESS_READ_MAX_BYTES", `"x"`}},
		{name: "HARNESS_READ_STREAM_MIN_SIZE", env: map[string]string{"HARNESS_READ_STREAM_MIN_SIZE": "10MiB"}, wantIn: []string{"HARNESS_READ_STREAM_MIN_SIZE", `"10MiB"`}},
		{name: "HARNESS_LIST_LIMIT", env: map[string]string{"HARNESS_LIST_LIMIT": "x"}, wantIn: []string{"HARNESS_LIST_LIMIT", `"x"`}},
		{name: "HARNESS_INVARIANTS", env: map[string]string{"HARNESS_INVARIANTS": "maybe"}, wantIn: []string{"HARNESS_INVARIANTS", `"maybe"`}},
		{name: "--durability", args: []string{"--durability", "fsync"}, wantIn: []string{"--durability", `"fsync"`, "full, atomic"}},
		{name: "HARNESS_DURABILITY", env: map[string]string{"HARNESS_DURABILITY": "atomc"}, wantIn: []string{"HARNESS_DURABILITY: ", `did you mean "atomic"?`}, wantNot: []string{"--durability"}},
		{name: "HARNESS_WORKSPACE_OWNER", env: map[string]string{"HARNESS_WORKSPACE_OWNER": "maybe"}, wantIn: []string{"HARNESS_WORKSPACE_OWNER", `"maybe"`}},
		{name: "HARNESS_TOOLCHAIN_CACHES", env: map[string]string{"HARNESS_TOOLCHAIN_CACHES": "yes"}, wantIn: []string{"HARNESS_TOOLCHAIN_CACHES", "not a boolean", `"yes"`}},
		{name: "HARNESS_JOURNAL_COMMANDS", env: map[string]string{"HARNESS_JOURNAL_COMMANDS": "yes"}, wantIn: []string{"HARNESS_JOURNAL_COMMANDS", "not a boolean", `"yes"`}},
		{name: "HARNESS_TEMP_ROOT with an empty entry", env: map[string]string{"HARNESS_TEMP_ROOT": "/a" + string(os.PathListSeparator) + string(os.PathListSeparator) + "/b"}, wantIn: []string{"HARNESS_TEMP_ROOT: "}, wantNot: []string{"--temp-root"}},
		{name: "YAML --log-format", yaml: "log-format: yaml\n", wantIn: []string{"harness.yaml:1: key \"log-format\": ", `"yaml"`, "json, console"}, wantNot: []string{"--log-format:"}},
		{name: "YAML negative list-limit", yaml: "fs: local\nlist-limit: -9\n", wantIn: []string{"harness.yaml:2: key \"list-limit\": ", "-9"}, wantNot: []string{"--list-limit"}},
		{name: "--landlock bogus", args: []string{"--landlock", "on"}, wantIn: []string{"--landlock: ", `"on"`, "auto, off"}},
		{name: "--vcs bogus", args: []string{"--vcs", "write"}, wantIn: []string{"--vcs: ", `"write"`, "commit, read-only"}},
		{name: "HARNESS_VCS bogus", env: map[string]string{"HARNESS_VCS": "rw"}, wantIn: []string{"HARNESS_VCS: ", `"rw"`}, wantNot: []string{"--vcs"}},
		{name: "--unprotect a name that is no default", args: []string{"--unprotect", ".git"}, wantIn: []string{"--unprotect: ", `".git" names no default protected path`, ".vscode"}},
		{name: "--protect with a comment", args: []string{"--protect", "#x"}, wantIn: []string{"--protect: ", `"#x"`, "a comment"}},
		{name: "--deny-read relative with a slash", args: []string{"--deny-read", "secrets/key.pem"}, wantIn: []string{`--deny-read: "secrets/key.pem": a relative pattern with a slash is ambiguous`, "**/dir/file"}, wantNot: []string{"deny-read pattern"}},
		{name: "--deny-read ~user", args: []string{"--deny-read", "~bob/.ssh"}, wantIn: []string{`--deny-read: "~bob/.ssh": ~user is not supported`, "/home/user/.ssh"}},
		{name: "--deny-read empty", args: []string{"--deny-read", "*.pem", "--deny-read", " "}, wantIn: []string{`--deny-read: " ": empty`}},
		{name: "--deny-read a comment", args: []string{"--deny-read", "#keys"}, wantIn: []string{`--deny-read: "#keys": a comment`}},
		{name: "--deny-read a bad glob", args: []string{"--deny-read", "/srv/[x"}, wantIn: []string{`--deny-read: "/srv/[x": syntax error in pattern`}},
		{name: "HARNESS_DENY_READ names the variable", env: map[string]string{"HARNESS_DENY_READ": "*.pem\na/b"}, wantIn: []string{`HARNESS_DENY_READ: "a/b": a relative pattern with a slash`}, wantNot: []string{"--deny-read"}},
		{name: "YAML deny-read names the file and line", yaml: "mode: read-only\ndeny-read: [\"~x/y\"]\n", wantIn: []string{`harness.yaml:2: key "deny-read": "~x/y": ~user is not supported`}, wantNot: []string{"--deny-read"}},
		{name: "YAML deny-read not a list", yaml: "deny-read: 3\n", wantIn: []string{`harness.yaml:1: key "deny-read" wants a list of strings`}},
		{name: "--allow-read a pattern that is no default", args: []string{"--allow-read", "~/.bashrc"}, wantIn: []string{`--allow-read: "~/.bashrc" names no default deny-read pattern; the defaults are ~/.ssh, ~/.gnupg,`, ".env, .env.*"}, wantNot: []string{"!.env.example"}},
		{name: "--allow-read a near miss gets a did-you-mean", args: []string{"--allow-read", "~/.ssh/"}, wantIn: []string{`--allow-read: "~/.ssh/" names no default deny-read pattern (did you mean "~/.ssh"?)`}},
		{name: "--allow-read an exemption is no default", args: []string{"--allow-read", "!.env.example"}, wantIn: []string{`--allow-read: "!.env.example" names no default`}},
		{name: "--allow-read an expanded home is no default", args: []string{"--allow-read", "/root/.ssh"}, wantIn: []string{`--allow-read: "/root/.ssh" names no default`}},
		{name: "HARNESS_ALLOW_READ names the variable", env: map[string]string{"HARNESS_ALLOW_READ": ".env\n.envrc"}, wantIn: []string{`HARNESS_ALLOW_READ: ".envrc" names no default`}, wantNot: []string{"--allow-read"}},
		{name: "YAML allow-read names the file and line", yaml: "allow-read:\n  - ~/.kube\n  - ~/.kub\n", wantIn: []string{`harness.yaml:1: key "allow-read": "~/.kub" names no default deny-read pattern (did you mean "~/.kube"?)`}},
		{name: "HARNESS_PROTECT with a bad glob", env: map[string]string{"HARNESS_PROTECT": "ok\n[bad"}, wantIn: []string{"HARNESS_PROTECT: ", `"[bad"`}},
		{name: "a flag over a bad YAML value names the flag", yaml: "mode: read-only\n", args: []string{"--mode", "yolo"}, wantIn: []string{"--mode: ", `"yolo"`}, wantNot: []string{"harness.yaml"}},
		{
			name:   "a bad variable fails even when the flag overrides it",
			args:   []string{"--read-limit", "5"},
			env:    map[string]string{"HARNESS_READ_LIMIT": "five"},
			wantIn: []string{"HARNESS_READ_LIMIT"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.yaml != "" {
				args = append([]string{"--config", writeYAML(t, tc.yaml)}, args...)
			}
			_, err := load(t, args, tc.env)
			require.Error(t, err)
			for _, s := range tc.wantIn {
				assert.Contains(t, err.Error(), s)
			}
			for _, s := range tc.wantNot {
				assert.NotContains(t, err.Error(), s)
			}
		})
	}

	t.Run("zero limits are valid (0 means the default)", func(t *testing.T) {
		cfg := mustLoad(t, []string{
			"--read-limit", "0", "--read-max-line-length", "0", "--read-max-bytes", "0",
			"--read-stream-min-size", "0", "--list-limit", "0",
		}, nil)
		assert.Equal(t, config.Default(), cfg)
	})

	t.Run("every allowed value is accepted", func(t *testing.T) {
		for _, v := range config.Backends {
			assert.Equal(t, v, mustLoad(t, []string{"--fs", v}, nil).FS)
		}
		for _, v := range []string{"read-only", "workspace-write", "danger-full-access"} {
			assert.Equal(t, v, mustLoad(t, []string{"--mode", v}, nil).Mode)
		}
		for _, v := range config.LogLevels {
			assert.Equal(t, v, mustLoad(t, []string{"--log-level", v}, nil).LogLevel)
		}
		for _, v := range config.LogFormats {
			assert.Equal(t, v, mustLoad(t, []string{"--log-format", v}, nil).LogFormat)
		}
	})

	t.Run("HARNESS_INVARIANTS takes every strconv.ParseBool spelling", func(t *testing.T) {
		for v, want := range map[string]bool{"1": true, "t": true, "TRUE": true, "True": true, "0": false, "f": false, "FALSE": false} {
			assert.Equal(t, want, mustLoad(t, nil, map[string]string{"HARNESS_INVARIANTS": v}).Invariants, v)
		}
	})

	t.Run("Validate checks in order and names the first bad flag", func(t *testing.T) {
		cfg := config.Config{FS: "zfs", Mode: "yolo", LogLevel: "x", LogFormat: "y"}
		err := cfg.Validate()
		require.Error(t, err)
		assert.True(t, strings.HasPrefix(err.Error(), "--fs:"), err.Error())
	})

	t.Run("Validate rejects the zero Config (no backend)", func(t *testing.T) {
		var cfg config.Config
		err := cfg.Validate()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "--fs")
	})
}

func TestTempRoots(t *testing.T) {
	t.Run("--temp-root is repeatable and keeps order", func(t *testing.T) {
		cfg := mustLoad(t, []string{"--temp-root", "/b", "--temp-root", "/a", "--temp-root", "/c"}, nil)
		assert.Equal(t, []string{"/b", "/a", "/c"}, cfg.TempRoots)
	})

	t.Run("HARNESS_TEMP_ROOT is a path list", func(t *testing.T) {
		sep := string(os.PathListSeparator)
		cfg := mustLoad(t, nil, map[string]string{"HARNESS_TEMP_ROOT": "/x" + sep + "/y"})
		assert.Equal(t, []string{"/x", "/y"}, cfg.TempRoots)
	})

	t.Run("HARNESS_TEMP_ROOT with one entry", func(t *testing.T) {
		cfg := mustLoad(t, nil, map[string]string{"HARNESS_TEMP_ROOT": "/only"})
		assert.Equal(t, []string{"/only"}, cfg.TempRoots)
	})

	t.Run("--temp-root replaces HARNESS_TEMP_ROOT, it does not append", func(t *testing.T) {
		cfg := mustLoad(t, []string{"--temp-root", "/f"}, map[string]string{"HARNESS_TEMP_ROOT": "/e"})
		assert.Equal(t, []string{"/f"}, cfg.TempRoots)
	})

	t.Run("temp roots are cleaned and made absolute", func(t *testing.T) {
		dir := t.TempDir()
		t.Chdir(dir)
		cfg := mustLoad(t, []string{"--temp-root", "rel/t", "--temp-root", "/abs/../abs/t/"}, nil)
		assert.Equal(t, []string{filepath.Join(dir, "rel", "t"), "/abs/t"}, cfg.TempRoots)
	})
}

func TestWorkspace(t *testing.T) {
	t.Run("a relative --workspace is made absolute against the working directory", func(t *testing.T) {
		dir := t.TempDir()
		t.Chdir(dir)
		cfg := mustLoad(t, []string{"--workspace", "proj/sub"}, nil)
		assert.Equal(t, filepath.Join(dir, "proj", "sub"), cfg.Workspace)
		assert.True(t, filepath.IsAbs(cfg.Workspace))
	})

	t.Run("--workspace . is the working directory", func(t *testing.T) {
		dir := t.TempDir()
		t.Chdir(dir)
		assert.Equal(t, dir, mustLoad(t, []string{"--workspace", "."}, nil).Workspace)
	})

	t.Run("a relative HARNESS_WORKSPACE is made absolute", func(t *testing.T) {
		dir := t.TempDir()
		t.Chdir(dir)
		assert.Equal(t, filepath.Join(dir, "w"), mustLoad(t, nil, map[string]string{"HARNESS_WORKSPACE": "w"}).Workspace)
	})

	t.Run("an absolute --workspace is cleaned", func(t *testing.T) {
		assert.Equal(t, "/a/c", mustLoad(t, []string{"--workspace", "/a/b/../c/"}, nil).Workspace)
	})

	t.Run("no workspace stays empty (the session decides)", func(t *testing.T) {
		assert.Empty(t, mustLoad(t, nil, nil).Workspace)
	})

	t.Run("the workspace need not exist", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "not", "yet")
		assert.Equal(t, p, mustLoad(t, []string{"--workspace", p}, nil).Workspace)
	})
}

func TestFlagsRegistration(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	config.Flags(fs, envOf(nil), config.HTTPFlags)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	assert.ElementsMatch(t, []string{
		"config", "fs", "mode", "workspace", "roots-timeout", "temp-root", "shared-temp", "landlock", "protect", "read-limit", "read-max-line-length",
		"read-max-bytes", "read-stream-min-size", "list-limit", "write-max-bytes", "result-text-max-bytes", "max-concurrent-calls", "invariants", "log-level", "log-format",
		"writable-root", "exec", "network", "unix-sockets", "unix-socket", "allow-domain", "exec-env", "exec-isolation", "exec-memory", "exec-pids", "exec-idle-timeout",
		"durability", "workspace-owner", "journal-max-bytes",
		"toolchain-caches", "vcs", "unprotect", "deny-read", "allow-read",
		"journal-commands", "gpg-agent",
		"audit-log", "audit-max-bytes",
		"listen", "metrics-listen", "otlp-endpoint", "token-file", "jwks-url", "jwt-issuer", "jwt-audience", "authorization-server", "resource-url",
		"principals", "allowed-origin", "allowed-host", "session-idle", "max-request-bytes", "principal-max-calls",
		"max-waiting-calls", "call-wait", "principal-max-sessions", "principal-max-commands", "principal-max-background",
		"principal-exec-memory", "principal-exec-pids",
		"tls-cert", "tls-key", "shutdown-timeout",
	}, names)
	for _, name := range names {
		assert.NotEmpty(t, fs.Lookup(name).Usage, name)
	}

	t.Run("the loader can run again after a second Parse, keeping earlier flags", func(t *testing.T) {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		loader := config.Flags(fs, envOf(nil))
		require.NoError(t, fs.Parse([]string{"--mode", "workspace-write", "--temp-root", "/a", "tool", "--temp-root", "/b"}))
		_, err := loader()
		require.NoError(t, err)
		require.NoError(t, fs.Parse(fs.Args()[1:]))
		cfg, err := loader()
		require.NoError(t, err)
		assert.Equal(t, "workspace-write", cfg.Mode)
		assert.Equal(t, []string{"/a", "/b"}, cfg.TempRoots)
	})
}

// TestLocalNeverPretendsToConfine (issue 12): --fs local implies
// danger-full-access; a mode naming another, from any source, is an error
// saying why and naming the source.
func TestLocalNeverPretendsToConfine(t *testing.T) {
	assert.Equal(t, "danger-full-access", mustLoad(t, []string{"--fs", "local"}, nil).Mode)
	assert.Equal(t, "danger-full-access", mustLoad(t, nil, map[string]string{"HARNESS_FS": "local", "HARNESS_MODE": "danger-full-access"}).Mode)
	tests := []struct {
		name string
		args []string
		vars map[string]string
		want string
	}{
		{name: "flag", args: []string{"--fs", "local", "--mode", "read-only"}, want: `--mode: "read-only" conflicts with --fs local`},
		{name: "variable", vars: map[string]string{"HARNESS_FS": "local", "HARNESS_MODE": "read-only"}, want: `HARNESS_MODE: "read-only" conflicts with --fs local`},
		{name: "file", args: []string{"--config", writeYAML(t, "fs: local\nmode: workspace-write\n")}, want: `:2: key "mode": "workspace-write" conflicts with --fs local: the local backend never confines`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.args, tc.vars)
			require.ErrorContains(t, err, tc.want)
		})
	}
	cfg := config.Default()
	cfg.FS = "local"
	require.ErrorContains(t, cfg.Validate(), "conflicts with --fs local", "a built config is checked too")
}

// TestAllowDomainNeedsNetworkDeny: allowed names with --network allow are
// a contradiction (the proxy would filter a network commands already
// have), refused from every source; so are they without the confining
// runner or with the landlock isolation (no namespace to listen in); with
// deny and bubblewrap they load.
func TestAllowDomainNeedsNetworkDeny(t *testing.T) {
	assert.Equal(t, []string{"github.com"}, mustLoad(t, []string{"--allow-domain", "github.com"}, nil).AllowDomains)
	tests := []struct {
		name string
		args []string
		vars map[string]string
		want string
	}{
		{name: "flag", args: []string{"--network", "allow", "--allow-domain", "github.com"}, want: `--allow-domain: ["github.com"] conflicts with --network allow`},
		{name: "variable", vars: map[string]string{"HARNESS_NETWORK": "allow", "HARNESS_ALLOW_DOMAIN": "github.com"}, want: `HARNESS_ALLOW_DOMAIN: ["github.com"] conflicts with --network allow`},
		{name: "file", args: []string{"--config", writeYAML(t, "network: allow\nallow-domain: [github.com]\n")}, want: `:2: key "allow-domain": ["github.com"] conflicts with --network allow`},
		{name: "exec local", args: []string{"--exec", "local", "--allow-domain", "github.com"}, want: `--allow-domain: ["github.com"] needs --exec sandbox`},
		{name: "exec off", args: []string{"--exec", "off", "--allow-domain", "github.com"}, want: `--allow-domain: ["github.com"] needs --exec sandbox`},
		{name: "landlock isolation", args: []string{"--exec-isolation", "landlock", "--allow-domain", "github.com"}, want: `--allow-domain: ["github.com"] needs --exec-isolation bwrap`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.args, tc.vars)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestJournalCommandsNeedsTheJournalAndARunner: --journal-commands with
// the journal off or no command runner is refused, naming where it came
// from; with both it loads.
func TestJournalCommandsNeedsTheJournalAndARunner(t *testing.T) {
	assert.True(t, mustLoad(t, []string{"--journal-commands"}, nil).JournalCommands)
	assert.True(t, mustLoad(t, []string{"--journal-commands", "--exec", "local"}, nil).JournalCommands)
	for _, tc := range []struct {
		name string
		args []string
		vars map[string]string
		want string
	}{
		{name: "journal off", args: []string{"--journal-commands", "--journal-max-bytes", "0"}, want: "--journal-commands: needs the journal, which --journal-max-bytes 0 turns off"},
		{name: "exec off", args: []string{"--journal-commands", "--exec", "off"}, want: "--journal-commands: needs a command runner, and --exec off has none"},
		{name: "variable", vars: map[string]string{"HARNESS_JOURNAL_COMMANDS": "true", "HARNESS_EXEC": "off"}, want: "HARNESS_JOURNAL_COMMANDS: needs a command runner"},
		{name: "file", args: []string{"--config", writeYAML(t, "exec: off\njournal-commands: true\n")}, want: `:2: key "journal-commands": needs a command runner`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.args, tc.vars)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestRootsTimeout(t *testing.T) {
	assert.Equal(t, 2*time.Second, mustLoad(t, []string{"--roots-timeout", "2s"}, nil).RootsTimeout)
	assert.Equal(t, time.Minute, mustLoad(t, nil, map[string]string{"HARNESS_ROOTS_TIMEOUT": "1m"}).RootsTimeout)
	assert.Equal(t, 90*time.Second, mustLoad(t, []string{"--config", writeYAML(t, "roots-timeout: 1m30s\n")}, nil).RootsTimeout)
	_, err := load(t, nil, map[string]string{"HARNESS_ROOTS_TIMEOUT": "soon"})
	require.ErrorContains(t, err, "HARNESS_ROOTS_TIMEOUT: not a duration")
	_, err = load(t, []string{"--roots-timeout", "-1s"}, nil)
	require.ErrorContains(t, err, "--roots-timeout: must not be negative")
}

// TestExecIsolationAndLimits (issue 22): --exec-isolation, --exec-memory and
// --exec-pids load from flags and the environment, and a bad value is an
// error naming the flag and what is wanted.
func TestExecIsolationAndLimits(t *testing.T) {
	cfg := mustLoad(t, []string{"--exec-isolation", "landlock", "--exec-memory", "512MiB", "--exec-pids", "64"}, nil)
	assert.Equal(t, "landlock", cfg.ExecIsolation)
	assert.Equal(t, "512MiB", cfg.ExecMemory)
	assert.Equal(t, 64, cfg.ExecPids)
	cfg = mustLoad(t, nil, map[string]string{"HARNESS_EXEC_MEMORY": "none", "HARNESS_EXEC_PIDS": "-1"})
	assert.Equal(t, "none", cfg.ExecMemory)
	assert.Equal(t, -1, cfg.ExecPids)
	// Issue 38: the interactive commands' idle limit.
	assert.Equal(t, 90*time.Second, mustLoad(t, []string{"--exec-idle-timeout", "90s"}, nil).ExecIdleTimeout)
	assert.Equal(t, time.Hour, mustLoad(t, nil, map[string]string{"HARNESS_EXEC_IDLE_TIMEOUT": "1h"}).ExecIdleTimeout)

	sizes := []struct {
		in   string
		want int64
	}{{"", 0}, {"none", -1}, {"1024", 1024}, {"4K", 4 << 10}, {"512M", 512 << 20}, {"512MiB", 512 << 20}, {"2G", 2 << 30}, {"2GB", 2 << 30}, {"1T", 1 << 40}}
	for _, c := range sizes {
		got, err := config.ParseSize(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
	for _, bad := range []string{"0", "-5", "2X", "G", "lots", "99999999999T"} {
		_, err := config.ParseSize(bad)
		assert.Error(t, err, bad)
	}
	for _, args := range [][]string{{"--exec-isolation", "docker"}, {"--exec-memory", "2X"}, {"--exec-pids", "-2"}, {"--exec-idle-timeout", "-1s"}} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		loader := config.Flags(fs, envOf(nil))
		require.NoError(t, fs.Parse(args))
		_, err := loader()
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), strings.TrimPrefix(args[0], "--"))
	}
}

// TestGPGAgentNeedsTheBubblewrapSandbox: --gpg-agent with another runner
// or the Landlock isolation is refused, naming where it came from.
func TestGPGAgentNeedsTheBubblewrapSandbox(t *testing.T) {
	assert.True(t, mustLoad(t, []string{"--gpg-agent"}, nil).GPGAgent)
	for _, tc := range []struct {
		name string
		args []string
		vars map[string]string
		want string
	}{
		{name: "exec local", args: []string{"--gpg-agent", "--exec", "local"}, want: "--gpg-agent: is for confined commands (--exec sandbox); --exec local commands reach the agent as the user does"},
		{name: "landlock", args: []string{"--gpg-agent", "--exec-isolation", "landlock"}, want: "--gpg-agent: needs --exec-isolation bwrap"},
		{name: "variable", vars: map[string]string{"HARNESS_GPG_AGENT": "true", "HARNESS_EXEC": "off"}, want: "HARNESS_GPG_AGENT: is for confined commands"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.args, tc.vars)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
