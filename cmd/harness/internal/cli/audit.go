package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// decisions are the values of harness audit --decision.
var decisions = []string{string(audit.Allowed), string(audit.Denied), string(audit.Approved), string(audit.Declined), string(audit.Invalid), string(audit.Refused)}

// auditCmd prints the audit log's records (and its rotated files'), oldest
// first, filtered: a table, or the records as JSON Lines with --json.
func auditCmd(_ context.Context, args []string, env Env) error {
	fset := newFlags("audit", env, true)
	var tools stringsFlag
	session := fset.String("session", "", "only the records of session `S`")
	principal := fset.String("principal", "", "only the records of principal `P` (an HTTP session's token subject)")
	since := fset.String("since", "", "only the records at or after `T`: a time (RFC 3339, e.g. 2026-12-01T09:00:00Z) or a duration back from now (e.g. 2h)")
	until := fset.String("until", "", "only the records before `T`: a time (RFC 3339) or a duration back from now")
	fset.Var(&tools, "tool", "only the records of tool `NAME` (repeatable: any of them)")
	decision := fset.String("decision", "", "only the records of decision `D`: "+strings.Join(decisions, ", "))
	path := fset.String("path", "", "only the records naming `PREFIX` or a path beneath it (paths, changed paths, a command's working directory)")
	asJSON := fset.Bool("json", false, "print the records as written, one JSON object a line")
	cfg, err := fset.parseFlagsOnly(args)
	if err != nil {
		return err
	}
	now := time.Now()
	f := audit.Filter{Session: *session, Principal: *principal, Tools: tools, Decision: audit.Decision(*decision)}
	if f.Since, err = parseWhen("since", *since, now); err != nil {
		return fset.usageErr(err)
	}
	if f.Until, err = parseWhen("until", *until, now); err != nil {
		return fset.usageErr(err)
	}
	if *decision != "" && !slices.Contains(decisions, *decision) {
		msg := fmt.Sprintf("audit: --decision %q: want one of %s", *decision, strings.Join(decisions, ", "))
		if s := config.Suggest(*decision, decisions); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return fset.usageErr(errors.New(msg))
	}
	if *path != "" {
		abs, err := filepath.Abs(*path)
		if err != nil {
			return fset.usageErr(fmt.Errorf("audit: --path %q: %w", *path, err))
		}
		// The records hold canonical paths.
		f.Path = sandboxpolicy.CanonicalPath(abs)
	}
	log := cfg.AuditLogPath()
	if log == "" {
		return fset.usageErr(errors.New("audit: no audit log: --audit-log is off, or there is no state directory ($XDG_STATE_HOME and $HOME are unset); name the log with --audit-log FILE"))
	}
	if files, err := audit.Files(log); err != nil {
		return fmt.Errorf("audit: %w", err)
	} else if len(files) == 0 {
		return fmt.Errorf("audit: no audit log at %s (nothing recorded yet, or the server writes another --audit-log)", log)
	}
	out := bufio.NewWriterSize(env.Stdout, 1<<16)
	var st audit.ReadStats
	if *asJSON {
		st, err = audit.Read(log, f, func(_ audit.Record, line []byte) error {
			_, _ = out.Write(line)
			return out.WriteByte('\n')
		})
	} else {
		st, err = writeAuditTable(out, log, f)
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if st.Skipped > 0 {
		_, _ = fmt.Fprintf(env.Stderr, "harness: audit: %d lines of %s were not records (a line cut short by a crash or a full disk) and were skipped\n", st.Skipped, log)
	}
	return nil
}

// writeAuditTable prints the selected records as a table: time (UTC),
// session, tool, decision, outcome (and code), path(s) or command line,
// bytes; each column as wide as its widest cell (the rows are held until
// the last is read), two spaces apart.
func writeAuditTable(w io.Writer, log string, f audit.Filter) (audit.ReadStats, error) {
	rows := [][auditColumns]string{{"TIME", "SESSION", "TOOL", "DECISION", "OUTCOME", "PATH OR COMMAND", "BYTES"}}
	st, err := audit.Read(log, f, func(r audit.Record, _ []byte) error {
		rows = append(rows, [auditColumns]string{
			r.Time.UTC().Format(time.RFC3339), orDash(r.Session), term(r.Tool),
			term(string(r.Decision)), outcome(r), target(r), strconv.FormatInt(r.Bytes, 10),
		})
		return nil
	})
	if err != nil {
		return st, err
	}
	var width [auditColumns]int
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var line []byte
	for _, row := range rows {
		line = line[:0]
		for i, c := range row {
			line = append(line, c...)
			if i < auditColumns-1 {
				line = append(line, strings.Repeat(" ", width[i]-utf8.RuneCountInString(c)+2)...)
			}
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return st, err
		}
	}
	return st, nil
}

// auditColumns is the number of columns of the table.
const auditColumns = 7

// outcome is a record's outcome column: ok, or error and its code; the
// records the log lost before it, when any.
func outcome(r audit.Record) string {
	s := string(r.Outcome)
	if r.Code != "" {
		s += " " + r.Code
	}
	if r.Lost > 0 {
		s += fmt.Sprintf(" (%d lost before)", r.Lost)
	}
	return term(s)
}

// target is a record's path column: a command's line (and its exit), else
// its paths, "-" for none.
func target(r audit.Record) string {
	if c := r.Command; c != nil {
		s := "$ " + c.Line
		switch {
		case c.Exit != nil:
			s += " (exit " + strconv.Itoa(*c.Exit) + ")"
		case c.Signal != "":
			s += " (" + c.Signal + ")"
		case c.Background:
			s += " (background)"
		}
		return term(s)
	}
	return orDash(strings.Join(r.Paths, " "))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return term(s)
}

// parseWhen parses the time of --name: "" is none, else a time in RFC 3339
// or a duration back from now.
func parseWhen(name, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("audit: --%s %q: want a time such as 2026-12-01T09:00:00Z or a duration such as 2h", name, s)
}

// stringsFlag is a repeatable string flag.
type stringsFlag []string

func (l *stringsFlag) String() string { return strings.Join(*l, ",") }

func (l *stringsFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}
