package compose_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/cmd/harness/internal/compose"
	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/journal"
)

// auditCfg is a workspace-write configuration of d with the audit log at
// path.
func auditCfg(d dirs, path string) config.Config {
	cfg := config.Default()
	cfg.Mode, cfg.Workspace, cfg.TempRoots, cfg.AuditLog = "workspace-write", d.ws, []string{d.temp}, path
	return cfg
}

// optionalSink is what a consumer of the audit log sees.
type optionalSink struct {
	fx.In
	Sink audit.Sink `optional:"true"`
}

func TestAuditLogIsTheComposedSink(t *testing.T) {
	d := newDirs(t)
	path := filepath.Join(d.outside, "state", "harness", "audit.jsonl")
	var got optionalSink
	opts, err := compose.Options(auditCfg(d, path), io.Discard, fx.Populate(&got))
	require.NoError(t, err)
	app := fxtest.New(t, opts)
	app.RequireStart()
	require.NotNil(t, got.Sink)
	got.Sink.Append(audit.Record{Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Tool: "read", Decision: audit.Allowed, Outcome: audit.OK})
	app.RequireStop() // drains and syncs

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, `{"time":"2026-12-01T00:00:00Z","tool":"read","decision":"allowed","outcome":"ok","duration_ms":0}`+"\n", string(b))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())
}

func TestAuditLogOff(t *testing.T) {
	for _, path := range []string{"off", ""} {
		t.Run("audit-log "+path, func(t *testing.T) {
			d := newDirs(t)
			var got optionalSink
			opts, err := compose.Options(auditCfg(d, path), io.Discard, fx.Populate(&got))
			require.NoError(t, err)
			app := fxtest.New(t, opts)
			app.RequireStart().RequireStop()
			assert.Nil(t, got.Sink)
			assert.NoFileExists(t, filepath.Join(d.ws, "off"))
		})
	}
}

func TestAuditLogInsideAWritableRootIsRefused(t *testing.T) {
	tests := []struct {
		name string
		// path returns the log file; it may prepare the layout.
		path func(t *testing.T, d dirs) string
		root func(d dirs) string
	}{
		{"in the workspace", func(_ *testing.T, d dirs) string { return filepath.Join(d.ws, "audit.jsonl") }, func(d dirs) string { return d.ws }},
		{"in a directory of the workspace not made yet", func(_ *testing.T, d dirs) string { return filepath.Join(d.ws, "a", "b", "audit.jsonl") }, func(d dirs) string { return d.ws }},
		{"in a temp root", func(_ *testing.T, d dirs) string { return filepath.Join(d.temp, "audit.jsonl") }, func(d dirs) string { return d.temp }},
		{"through a symlink from outside into the workspace", func(t *testing.T, d dirs) string {
			require.NoError(t, os.Symlink(d.ws, filepath.Join(d.outside, "link")))
			return filepath.Join(d.outside, "link", "logs", "audit.jsonl")
		}, func(d dirs) string { return d.ws }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDirs(t)
			path := tt.path(t, d)
			opts, err := compose.Options(auditCfg(d, path), io.Discard)
			require.NoError(t, err)
			app := fx.New(opts, fx.NopLogger)
			err = app.Err()
			var fe *config.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, "audit-log", fe.Key)
			assert.Contains(t, fe.Error(), "--audit-log: "+path+" is inside "+tt.root(d)+", which calls may write")
			assert.NoFileExists(t, path)
			entries, err := os.ReadDir(d.ws)
			require.NoError(t, err)
			assert.Empty(t, entries, "nothing made in the workspace")
		})
	}
}

func TestAuditLogUnopenableIsAStartError(t *testing.T) {
	d := newDirs(t)
	file := filepath.Join(d.outside, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	opts, err := compose.Options(auditCfg(d, filepath.Join(file, "audit.jsonl")), io.Discard)
	require.NoError(t, err)
	var fe *config.FieldError
	require.ErrorAs(t, fx.New(opts, fx.NopLogger).Err(), &fe)
	assert.Contains(t, fe.Error(), "--audit-log: audit log: mkdir "+file+": not a directory")
}

// The log's loss reports reach the composed stderr.
func TestAuditLogReportsOnTheComposedStderr(t *testing.T) {
	d := newDirs(t)
	path := filepath.Join(d.outside, "audit.jsonl")
	require.NoError(t, os.Symlink("/dev/full", path))
	var stderr bytes.Buffer
	var got optionalSink
	opts, err := compose.Options(auditCfg(d, path), &stderr, fx.Populate(&got))
	require.NoError(t, err)
	app := fxtest.New(t, opts)
	app.RequireStart()
	got.Sink.Append(audit.Record{Tool: "read"})
	require.Error(t, app.Stop(t.Context()), "the last batch could not be written")
	assert.Contains(t, stderr.String(), "harness: audit log "+path+": records lost: write "+path+": no space left on device")
	assert.Regexp(t, `\terror\taudit\taudit log: records lost\t`, stderr.String(), "and in the log, at error level")
}

// A workspace that is the home directory keeps the default audit log, in
// the state directory the deny-read set hides; a log elsewhere in it is
// still refused.
func TestAuditLogInTheStateDirectoryOfAWorkspaceHome(t *testing.T) {
	d := newDirs(t)
	t.Setenv("HOME", d.ws)
	t.Setenv("XDG_STATE_HOME", filepath.Join(d.ws, ".local", "state"))

	t.Run("the default log in the state directory is allowed", func(t *testing.T) {
		path := config.DefaultAuditLog(os.Getenv)
		require.Equal(t, filepath.Join(d.ws, ".local", "state", "harness", "audit.jsonl"), path)
		var got optionalSink
		opts, err := compose.Options(auditCfg(d, path), io.Discard, fx.Populate(&got))
		require.NoError(t, err)
		app := fxtest.New(t, opts)
		app.RequireStart()
		require.NotNil(t, got.Sink)
		got.Sink.Append(audit.Record{Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Tool: "read", Decision: audit.Allowed, Outcome: audit.OK})
		app.RequireStop()
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, `{"time":"2026-12-01T00:00:00Z","tool":"read","decision":"allowed","outcome":"ok","duration_ms":0}`+"\n", string(b))
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	})
	for _, rel := range []string{"audit.jsonl", ".local/state/audit.jsonl", ".local/state/harness-logs/audit.jsonl"} {
		t.Run("a log the deny-read set does not hide is refused: "+rel, func(t *testing.T) {
			path := filepath.Join(d.ws, rel)
			opts, err := compose.Options(auditCfg(d, path), io.Discard)
			require.NoError(t, err)
			var fe *config.FieldError
			require.ErrorAs(t, fx.New(opts, fx.NopLogger).Err(), &fe)
			assert.Equal(t, "audit-log", fe.Key)
			assert.Contains(t, fe.Error(), "--audit-log: "+path+" is inside "+d.ws+", which calls may write")
			assert.NoFileExists(t, path)
		})
	}
}

// TestAuditLogInsideAPrincipalsWorkspaceIsRefused (issue 26): serve
// --listen --principals refuses an audit log inside any principal's
// workspace, even when the server's own working directory and workspace
// are elsewhere: that principal's sessions could rewrite every record.
func TestAuditLogInsideAPrincipalsWorkspaceIsRefused(t *testing.T) {
	d := newDirs(t)
	alice := filepath.Join(d.outside, "alice")
	require.NoError(t, os.Mkdir(alice, 0o755))
	principals := filepath.Join(d.outside, "principals.yaml")
	require.NoError(t, os.WriteFile(principals, []byte("principals:\n  alice: {workspaces: ["+alice+"], mode: workspace-write}\n"), 0o600))
	tokens := filepath.Join(d.outside, "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("# none\n"), 0o600))
	path := filepath.Join(alice, "audit.jsonl")
	cfg := auditCfg(d, path)
	cfg.Workspace = ""
	cfg.HTTP = config.HTTP{Listen: "127.0.0.1:0", TokenFile: tokens, Principals: principals}
	opts, err := compose.Options(cfg, io.Discard)
	require.NoError(t, err)
	err = fx.New(opts, fx.NopLogger).Err()
	var fe *config.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Contains(t, fe.Error(), "--audit-log: "+path+" is inside "+alice+", which calls may write")
	assert.NoFileExists(t, path)
}

// TestStateDirUnusable: where the state directory cannot be made (its
// parent is a file), the graph starts without the journal and without the
// default audit log, each reason kept in *compose.Unavailable, and makes
// nothing; an audit log the user named there, or --journal-commands,
// still stops the start.
func TestStateDirUnusable(t *testing.T) {
	d := newDirs(t)
	file := filepath.Join(d.outside, "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o600))
	t.Setenv("XDG_STATE_HOME", filepath.Join(file, "state"))
	defaultLog := config.DefaultAuditLog(os.Getenv)
	tests := []struct {
		name    string
		edit    func(*config.Config)
		wantErr string // "" when the graph starts
	}{
		{"defaults", func(c *config.Config) { c.AuditLog, c.AuditLogDefault = defaultLog, true }, ""},
		{"a named audit log", func(c *config.Config) { c.AuditLog = defaultLog }, "--audit-log: audit log: mkdir " + file + ": not a directory"},
		{"--journal-commands", func(c *config.Config) {
			c.AuditLog, c.AuditLogDefault, c.JournalCommands, c.Exec = defaultLog, true, true, "local"
		}, "--journal-commands: the journal is off: journal open: cannot make the journal directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := auditCfg(d, "")
			tt.edit(&cfg)
			var (
				got struct {
					fx.In
					Sink    audit.Sink       `optional:"true"`
					Journal *journal.Journal `optional:"true"`
				}
				off *compose.Unavailable
			)
			opts, err := compose.Options(cfg, io.Discard, fx.Populate(&got, &off))
			require.NoError(t, err)
			app := fx.New(opts, fx.NopLogger)
			if tt.wantErr != "" {
				require.Error(t, app.Err())
				assert.Contains(t, app.Err().Error(), tt.wantErr)
			} else {
				require.NoError(t, app.Err())
				require.NoError(t, app.Start(context.Background()))
				require.NoError(t, app.Stop(context.Background()))
				assert.Nil(t, got.Sink)
				assert.Nil(t, got.Journal)
				assert.Contains(t, off.Journal(), "cannot make the journal directory \""+filepath.Join(file, "state", "harness", "journal")+"\"")
				assert.Contains(t, off.AuditLog(), "mkdir "+file+": not a directory: calls are not audited")
			}
			b, err := os.ReadFile(file)
			require.NoError(t, err)
			assert.Equal(t, "x", string(b), "nothing made")
		})
	}
}
