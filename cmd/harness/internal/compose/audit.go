package compose

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/metrics"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/telemetry"
)

// auditLog returns the option that provides the audit.Sink of cfg: the
// audit log file (audit.OpenLog), checked against the writable roots
// (CheckAuditLog), opened when the graph is built (a bad file is a start
// error) and closed, drained and synced, when the application stops. Its
// losses are reported to the log and on stderr. No Sink is provided when
// the log is off: its consumers take it as optional. The default file
// (config.Config.AuditLogDefault) is best-effort: when it cannot be opened
// the Sink is nil, the reason is logged once at warn and kept in
// *Unavailable; a file the user named that cannot be opened is a
// *config.FieldError (key "audit-log").
//
// With metrics (config.Config.Metrics, a *metrics.Metrics in the graph) the
// Sink counts every record into them, and queues it for the OTLP export
// when there is one (a *telemetry.Exporter in the graph), before the log
// gets it; the log's written and lost counts are exported; it is provided
// with the log off too.
func auditLog(cfg config.Config, stderr io.Writer) fx.Option {
	path := cfg.AuditLogPath()
	if path == "" {
		if !cfg.Metrics() {
			return fx.Options()
		}
		return fx.Provide(func(in exportIn) audit.Sink { return exportSink(in.Metrics, in.Telemetry, nil) })
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	return fx.Options(
		fx.Provide(func(in auditIn) (audit.Sink, error) {
			lc, log, off := in.Lifecycle, in.Logger, in.Off
			if err := CheckAuditLog(path, in.Policy); err != nil {
				return nil, err
			}
			l, err := audit.OpenLog(audit.LogOptions{Path: path, MaxBytes: cfg.AuditMaxBytes, Log: log.Named("audit"), Stderr: stderr})
			if err != nil && cfg.AuditLogDefault {
				why := err.Error() + ": calls are not audited (--audit-log FILE names another file, --audit-log off turns it off without this warning)"
				off.set(&off.auditLog, why)
				log.Warn("audit log off: " + why)
				if in.Metrics != nil {
					return exportSink(in.Metrics, in.Telemetry, nil), nil
				}
				return nil, nil
			}
			if err != nil {
				return nil, &config.FieldError{Key: "audit-log", Msg: err.Error()}
			}
			lc.Append(fx.StopHook(l.Close))
			if in.Metrics != nil {
				in.Metrics.AuditLog(l.Counts)
				return exportSink(in.Metrics, in.Telemetry, l), nil
			}
			return l, nil
		}),
		// Open it at start even before a tool asks for it, so a file
		// that cannot be the log stops the server then.
		fx.Invoke(func(audit.Sink) {}),
	)
}

// auditIn is what the audit log's provider takes.
type auditIn struct {
	fx.In

	Lifecycle fx.Lifecycle
	Policy    *sandboxpolicy.Service
	Logger    *zap.Logger
	Off       *Unavailable
	Metrics   *metrics.Metrics    `optional:"true"`
	Telemetry *telemetry.Exporter `optional:"true"`
}

// exportIn is where each call's record goes besides the audit log: the
// metrics, and the OTLP export when there is one (config.Config.OTLP).
type exportIn struct {
	fx.In

	Metrics   *metrics.Metrics
	Telemetry *telemetry.Exporter `optional:"true"`
}

// exportSink returns the audit.Sink that counts each record into m,
// queues it for the OTLP export e (nil: none), then hands it to next (nil:
// none).
func exportSink(m *metrics.Metrics, e *telemetry.Exporter, next audit.Sink) audit.Sink {
	if e != nil {
		next = e.Sink(next)
	}
	return m.Sink(next)
}

// CheckAuditLog returns a *config.FieldError (key "audit-log") when path,
// canonical, is inside one of the roots pol's policy may make writable
// (the workspace root, the temp and extra writable roots, every HTTP
// principal's workspaces, whatever the mode: a session may be granted
// workspace-write later): a command or a
// file tool could then forge or erase records. A path the deny-read set
// denies, itself or through an ancestor (the state directory, which the
// default audit log is in), is allowed inside a root: the file tools
// refuse to touch it and commands see it masked, so a workspace equal to
// $HOME can keep the default log. Roots a client announces after start
// are not known here.
func CheckAuditLog(path string, pol *sandboxpolicy.Service) error {
	canon := canonicalFile(path)
	if _, denied := pol.DenyRead().Denied(canon, false); denied {
		return nil
	}
	for _, r := range append(pol.Default().Roots(), pol.PrincipalRoots()...) {
		if canon == r || strings.HasPrefix(canon, r+string(filepath.Separator)) {
			return &config.FieldError{Key: "audit-log", Msg: fmt.Sprintf(
				"%s is inside %s, which calls may write: an agent could forge or erase its records; "+
					"give a file outside the workspace and every writable root, or one the deny-read set hides (the default is audit.jsonl in the state directory), or off", path, r)}
		}
	}
	return nil
}

// canonicalFile returns path with its longest existing ancestor resolved
// (every symlink in it), the rest appended as given: the log and its
// directories may not exist yet.
func canonicalFile(path string) string {
	path = filepath.Clean(path)
	var rest []string
	for dir := path; ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(dir); err == nil || !errors.Is(err, fs.ErrNotExist) || dir == filepath.Dir(dir) {
			return filepath.Join(append([]string{sandboxpolicy.CanonicalPath(dir)}, rest...)...)
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
	}
}
