package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dsh-go/harness/services/journal"
	"github.com/dsh-go/harness/services/undo"
)

// The history and undo commands read the journal the server writes: the
// directory --journal names, else journal/ in harness's state directory.

// journalFlag registers --journal on fs and returns the function giving
// the directory to use: the flag, else the server's (journal.DefaultDir).
func journalFlag(fs *flagSet) func() (string, error) {
	dir := fs.String("journal", "", "the journal `DIR` to read (default: the server's, journal in the state directory, $XDG_STATE_HOME/harness or ~/.local/state/harness)")
	return func() (string, error) {
		if *dir != "" {
			return filepath.Abs(*dir)
		}
		d, err := journal.DefaultDir()
		if err != nil {
			return "", fs.usageErr(fmt.Errorf("%w: name the journal with --journal DIR", err))
		}
		return d, nil
	}
}

// openJournal opens the journal in dir, which must exist (a reader never
// makes one), with no cap of its own: the server's --journal-max-bytes
// drops old entries, never a reader.
func openJournal(dir string) (*journal.Journal, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, &undo.Error{Code: journal.CodeNotFound, Reason: "no journal at " + dir + ": no change has been journaled there (--journal names another)"}
	}
	return journal.Open(journal.Options{Dir: dir, MaxBytes: math.MaxInt64, Sync: true})
}

// listJournal returns every entry of the journal in dir, oldest first:
// none, said on stderr, when there is no journal there yet.
func listJournal(dir string, stderr io.Writer) ([]journal.Entry, error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		_, _ = fmt.Fprintf(stderr, "harness: no journal at %s yet: no change has been journaled there (--journal names another)\n", dir)
		return nil, nil
	}
	j, err := openJournal(dir)
	if err != nil {
		return nil, err
	}
	defer j.Close() //nolint:errcheck // read-only use
	return j.List(journal.ListOptions{})
}

// historyItem is one line of `harness history --json`: the entry and, when
// it stands undone, the undo that undid it.
type historyItem struct {
	journal.Entry
	UndoneBy string `json:"undone_by,omitempty"`
}

// history lists the journal's changes.
func history(_ context.Context, args []string, env Env) error {
	fset := newFlags("history", env, true)
	session := fset.String("session", "", "list only the changes of session `S`")
	since := fset.String("since", "", "list only the changes since `T`: a time (RFC 3339, e.g. 2026-12-01T09:00:00Z) or a duration back from now (e.g. 2h)")
	asJSON := fset.Bool("json", false, "print one JSON object a line (the journal entry, with undone_by)")
	dirOf := journalFlag(fset)
	if _, err := fset.parseFlagsOnly(args); err != nil {
		return err
	}
	from, err := parseSince(*since, time.Now())
	if err != nil {
		return fset.usageErr(err)
	}
	dir, err := dirOf()
	if err != nil {
		return err
	}
	all, err := listJournal(dir, env.Stderr)
	if err != nil {
		return termErr(err)
	}
	undone := undo.UndoneBy(all)
	var items []historyItem
	for _, e := range all {
		if (*session == "" || e.Session == *session) && !e.Time.Before(from) {
			items = append(items, historyItem{Entry: e, UndoneBy: undone[e.ID]})
		}
	}
	if *asJSON {
		for _, it := range items {
			if err := writeJSONLine(env.Stdout, it); err != nil {
				return err
			}
		}
		return nil
	}
	return writeHistory(env.Stdout, items)
}

// parseSince parses --since: "" is the beginning, else a time in RFC 3339
// or a duration back from now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("history: --since %q: want a time such as 2026-12-01T09:00:00Z or a duration such as 2h", s)
}

// writeHistory prints the items as a table: ID, time (UTC), session,
// tool, kind, path(s), bytes kept, status.
func writeHistory(w io.Writer, items []historyItem) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "ID\tTIME\tSESSION\tTOOL\tKIND\tPATH\tBYTES\tSTATUS")
	for _, it := range items {
		session := it.Session
		if session == "" {
			session = "-"
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", term(it.ID), it.Time.UTC().Format(time.RFC3339), term(session),
			term(it.Tool), term(string(it.Kind)), term(strings.Join(it.Paths, " -> ")), it.Bytes, term(status(it)))
	}
	return tw.Flush()
}

// status says where a change stands, for the table.
func status(it historyItem) string {
	var s string
	switch {
	case it.UndoneBy != "":
		s = "undone by " + it.UndoneBy
	case it.Dropped:
		s = "dropped (over the journal's cap)"
	case !it.Kept && it.Status != journal.Failed:
		s = "not kept"
		if it.NotKept != "" {
			s += " (" + it.NotKept + ")"
		}
	default:
		s = string(it.Status)
	}
	if it.Kind == journal.Undo && it.Undoes != "" {
		s += ", undoes " + it.Undoes
	}
	return s
}

// undoChanges undoes one change, or a session's (`harness undo`).
func undoChanges(ctx context.Context, args []string, env Env) (int, error) {
	fset := newFlags("undo", env, true)
	session := fset.String("session", "", "undo every change of session `S` that stands, newest first, all or nothing")
	force := fset.Bool("force", false, "restore even where a path changed after the change (never through a symlink planted since)")
	dirOf := journalFlag(fset)
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if err := fset.parse(args); err != nil {
		return ExitUsage, err
	}
	if id == "" && fset.NArg() > 0 {
		id = fset.Arg(0)
		if err := fset.parse(fset.Args()[1:]); err != nil {
			return ExitUsage, err
		}
	}
	if fset.NArg() > 0 {
		return ExitUsage, fset.usageErr(fmt.Errorf("unexpected arguments: %s", strings.Join(fset.Args(), " ")))
	}
	if _, err := fset.load(); err != nil {
		return ExitUsage, &usageError{err: err}
	}
	if (id == "") == (*session == "") {
		return ExitUsage, fset.usageErr(errors.New("undo takes one change ID or --session S (see `harness history`)"))
	}
	dir, err := dirOf()
	if err != nil {
		return ExitUsage, err
	}
	j, err := openJournal(dir)
	if err != nil {
		return ExitToolError, termErr(err)
	}
	defer j.Close() //nolint:errcheck // each undo is durable when it returns
	u := undo.New(j)
	opts := undo.Options{Force: *force}
	if id != "" {
		done, err := u.Undo(ctx, id, opts)
		if err != nil {
			return ExitToolError, termErr(err)
		}
		return ExitOK, writeUndone(env.Stdout, []undo.Undone{done}, nil)
	}
	res, err := u.UndoSession(ctx, *session, opts)
	if werr := writeUndone(env.Stdout, res.Undone, res.Skipped); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return ExitToolError, termErr(err)
	}
	return ExitOK, nil
}

// writeUndone prints each change undone (its kind, paths, what the undo
// did, and the undo's own ID, which `harness undo` takes back), its notes,
// and each change skipped.
func writeUndone(w io.Writer, done []undo.Undone, skipped []undo.Skipped) error {
	var b strings.Builder
	for _, d := range done {
		_, _ = fmt.Fprintf(&b, "undid %s (%s %s): %s\n", term(d.Entry.ID), term(string(d.Entry.Kind)), term(strings.Join(d.Entry.Paths, " -> ")), term(undid(d.Entry)))
		for _, n := range d.Notes {
			_, _ = fmt.Fprintf(&b, "  note: %s\n", term(n))
		}
		_, _ = fmt.Fprintf(&b, "  recorded as %s: `harness undo %s` takes this undo back\n", term(d.Undo.ID), term(d.Undo.ID))
	}
	for _, s := range skipped {
		_, _ = fmt.Fprintf(&b, "skipped %s (%s %s): %s\n", term(s.Entry.ID), term(string(s.Entry.Kind)), term(strings.Join(s.Entry.Paths, " -> ")), term(s.Reason))
	}
	if len(done) == 0 && len(skipped) > 0 {
		b.WriteString("nothing to undo\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// undid says what undoing e did: moved its entry back, removed what it
// made, or restored its prior entries (a tree counted).
func undid(e journal.Entry) string {
	switch {
	case e.Kind == journal.Move && len(e.Paths) == 2:
		for _, n := range e.Before {
			if n.Path == e.Paths[1] {
				return "moved back to " + e.Paths[0] + ", and restored " + e.Paths[1] + " it had replaced"
			}
		}
		return "moved back to " + e.Paths[0]
	case len(e.Before) == 0:
		return "removed " + strings.Join(e.Paths, ", ")
	case len(e.Before) == 1:
		return "restored " + e.Before[0].Path
	}
	return fmt.Sprintf("restored %s and the %d entries beneath it", e.Before[0].Path, len(e.Before)-1)
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
