package toolfs

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/tool"
)

// ListEntry is one entry of a listing.
type ListEntry struct {
	Name    string `json:"name" jsonschema:"the entry's name"`
	Path    string `json:"path" jsonschema:"the entry's slash-separated path relative to the listed directory (its name at depth 1)"`
	Type    string `json:"type" jsonschema:"file, directory or other (a symlink's destination type, with symlink set)"`
	Size    *int64 `json:"size,omitempty" jsonschema:"size in bytes, for files"`
	ModTime string `json:"modTime,omitempty" jsonschema:"the last modification time, RFC 3339 in UTC with nanoseconds (absent when the metadata could not be read)"`
	Symlink bool   `json:"symlink,omitempty" jsonschema:"true for a symbolic link: its type, size and time are its destination's, and a tree never descends into it"`
	// Reason says why an entry of type other has no metadata, or why a
	// directory's entries could not be listed.
	Reason string `json:"reason,omitempty" jsonschema:"why the entry's metadata could not be read (type other), or why a directory of a tree could not be listed"`
}

// ListValue is the structured result of list.
type ListValue struct {
	Path         string      `json:"path" jsonschema:"the display path of the directory"`
	Offset       int         `json:"offset" jsonschema:"the 1-based first entry returned"`
	Depth        int         `json:"depth" jsonschema:"the levels listed (1: the directory's own entries)"`
	Entries      []ListEntry `json:"entries" jsonschema:"the returned entries: in byte order of their names, each directory followed by its own entries when depth is above 1"`
	TotalEntries int         `json:"totalEntries" jsonschema:"the number of entries in the directory (or the tree down to depth); a lower bound when totalIsLowerBound"`
	// TotalIsLowerBound is set when a tree walk stopped before counting
	// every entry.
	TotalIsLowerBound bool `json:"totalIsLowerBound,omitempty" jsonschema:"true when the tree walk stopped before counting every entry (the window was full, or the walk cap was reached)"`
	Truncated         bool `json:"truncated" jsonschema:"true when entries after the returned ones exist"`
	WalkCapped        bool `json:"walkCapped,omitempty" jsonschema:"true when the tree walk stopped after reading the cap of names"`
}

// List returns the list tool: a directory's entries, or the tree beneath it
// to a depth, with type, size and modification time. The original has no
// listing tool; an MCP client without a shell needs one. It runs in
// parallel with other calls.
func (t *Tools) List() *tool.Tool {
	return t.g.Tool(tool.Tool{
		Name: "list",
		Description: "List a directory's entries with their type, size and modification time; " +
			"with depth above 1, the tree beneath it (symlinks are listed, never followed).",
		InputSchema: object(
			prop{name: "path", schema: str("Directory to list, resolved by the filesystem backend. Defaults to the session's working directory.")},
			prop{name: "depth", schema: depthSchema()},
			prop{name: "offset", schema: positive("1-based first entry to return (of the tree, depth first, when depth is above 1). Defaults to 1.")},
			prop{name: "limit", schema: atMost(positive("Maximum number of entries to return. Defaults to "+strconv.Itoa(t.cfg.ListLimit)+"."), t.cfg.ListLimit)},
		),
		OutputSchema: outputSchema[ListValue](),
		Annotations:  tool.Annotations{ReadOnly: true, Idempotent: true},
	}, false, t.list)
}

func (t *Tools) list(ctx context.Context, call *guard.Call) tool.Result {
	a := args(call.Args)
	var err error
	path := "."
	if a.present("path") {
		if path, err = a.path("path"); err != nil {
			return t.g.Fail(err, nil)
		}
	}
	depth, err := a.optPositive("depth", 1)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	if depth > fs.MaxListDepth {
		return t.g.Fail(guard.BadArg("depth must be less than or equal to "+strconv.Itoa(fs.MaxListDepth)), nil)
	}
	offset, err := a.optPositive("offset", 1)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	limit, err := a.optPositive("limit", t.cfg.ListLimit)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	if limit > t.cfg.ListLimit {
		return t.g.Fail(guard.BadArg("limit must be less than or equal to "+strconv.Itoa(t.cfg.ListLimit)), nil)
	}
	policy := call.Standing()
	target, err := t.resolve(ctx, call.Session, policy, path)
	if err != nil {
		return t.g.Fail(err, policy)
	}
	window := fs.ListWindow{Offset: offset, Limit: limit, Depth: depth}
	if call.Progress != nil {
		// The number of names is unknown until they are all read.
		window.Progress = func(names int) { call.Progress(float64(names), 0, "") }
	}
	listing, err := t.deps.FS.ListDir(ctx, target, window)
	if err != nil {
		return t.g.Fail(err, policy)
	}
	dp := target.DisplayPath
	total := listing.Total
	page := listing.Entries
	if len(page) == 0 && (offset > total || listing.Partial) && (offset != 1 || total != 0) {
		return t.g.Fail(offsetPastEnd(dp, offset, total, listing.Partial, "entries", "directory"), policy)
	}
	end := offset - 1 + len(page)
	value := ListValue{
		Path: dp, Offset: offset, Depth: depth, Entries: make([]ListEntry, 0, len(page)), TotalEntries: total,
		TotalIsLowerBound: listing.Partial, Truncated: end < total || listing.Partial, WalkCapped: listing.WalkCapped,
	}
	var b strings.Builder
	b.WriteString("<path>" + dp + "</path>\n<type>directory</type>\n<entries>\n")
	for _, e := range page {
		le := ListEntry{Name: e.Name, Path: e.Path, Type: string(e.Type), Size: e.Size, Symlink: e.Symlink, Reason: e.Reason}
		if !e.ModTime.IsZero() {
			le.ModTime = e.ModTime.UTC().Format(time.RFC3339Nano)
		}
		value.Entries = append(value.Entries, le)
		b.WriteString(entryLine(e))
		b.WriteByte('\n')
	}
	if len(page) > 0 {
		b.WriteByte('\n')
	}
	what := "directory"
	if depth > 1 {
		what = "tree"
	}
	switch {
	case value.Truncated:
		b.WriteString("(Showing entries " + strconv.Itoa(offset) + "-" + strconv.Itoa(end) + " of " + countText(total, listing.Partial) +
			". Use offset=" + strconv.Itoa(end+1) + " to continue.")
		if listing.WalkCapped {
			b.WriteString(" The walk stopped after reading " + strconv.Itoa(fs.MaxListTreeNames) + " names; list a subdirectory to see past it.")
		}
		b.WriteByte(')')
	default:
		b.WriteString("(End of " + what + " - total " + strconv.Itoa(total) + " entries)")
	}
	b.WriteString("\n</entries>")
	return tool.Result{Text: b.String(), Value: value}
}

// depthSchema is list's depth argument: an integer, 1..fs.MaxListDepth.
func depthSchema() *jsonschema.Schema {
	s := positive("Levels to list: 1 lists the directory's own entries, 2 also those of its subdirectories, and so on, at most " +
		strconv.Itoa(fs.MaxListDepth) + ". Every entry is listed, dot-names and .git included; a symlink is never descended. Defaults to 1.")
	s.Maximum = jsonschema.Ptr(float64(fs.MaxListDepth))
	return s
}

// countText is n, or "at least n" when n is a lower bound.
// offsetPastEnd is the refusal of a read or list whose offset lies past
// the last of the total lines or entries (unit) of dp, at least total when
// lowerBound: a *guard.ArgError (INVALID_ARGUMENT), never FS_NOT_FOUND,
// since the file or directory (what) is there; the message names the
// count and the offsets that read it, e.g. `offset 9 is out of range for
// "a.txt" (2 lines); the file is there: use an offset from 1 to 2`.
func offsetPastEnd(dp string, offset, total int, lowerBound bool, unit, what string) error {
	use := "offset 1"
	if total > 1 {
		use = "an offset from 1 to " + strconv.Itoa(total)
	}
	return guard.BadArg("offset " + strconv.Itoa(offset) + " is out of range for " + strconv.Quote(dp) +
		" (" + countText(total, lowerBound) + " " + unit + "); the " + what + " is there: use " + use)
}

func countText(n int, lowerBound bool) string {
	if lowerBound {
		return "at least " + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

// entryLine is one compact line of the listing: the entry's path (its name
// at depth 1) rendered by displayName, then "/" for a directory, and in
// parentheses what is known of it: "symlink" for a link, the size of a file
// ("N bytes"), the modification time in UTC to the second ("modified
// 2026-01-02T03:04:05Z"), "other" for anything else, and the reason its
// metadata or, for a directory of a tree, its entries could not be read.
// For example "src/main.go (1200 bytes, modified 2026-01-02T03:04:05Z)",
// "vendor/ (symlink, modified ...)", "broken (other: dangling symlink)".
func entryLine(e fs.DirEntry) string {
	name := displayName(e.Path)
	var notes []string
	if e.Symlink && e.Reason == "" {
		notes = append(notes, "symlink")
	}
	switch e.Type {
	case fs.TypeDirectory:
		name += "/"
	case fs.TypeFile:
		if e.Size != nil {
			notes = append(notes, strconv.FormatInt(*e.Size, 10)+" bytes")
		}
	default:
		if e.Reason != "" {
			return name + " (other: " + e.Reason + ")"
		}
		notes = append(notes, "other")
	}
	if !e.ModTime.IsZero() {
		notes = append(notes, "modified "+e.ModTime.UTC().Format(time.RFC3339))
	}
	if e.Reason != "" {
		notes = append(notes, "not listed: "+e.Reason)
	}
	if len(notes) == 0 {
		return name
	}
	return name + " (" + strings.Join(notes, ", ") + ")"
}

// displayName is how the listing text shows a name (issue 12): as it is,
// unless it holds a character that could forge or hide output (a control
// character such as a newline, a Unicode format character such as a bidi
// override, a line or paragraph separator, invalid UTF-8) or starts with a
// double quote; then as a JSON string literal with those characters
// escaped, which the model can pass back as a path argument as is. The
// structured output keeps the raw name.
func displayName(name string) string {
	if !strings.HasPrefix(name, `"`) && strings.IndexFunc(name, unsafeInName) < 0 && utf8.ValidString(name) {
		return name
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range name {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unsafeInName(r):
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// unsafeInName reports a rune the listing text never shows raw: Unicode
// control (Cc), format (Cf), line and paragraph separators (Zl, Zp), and the
// replacement of an invalid byte.
func unsafeInName(r rune) bool {
	return r == utf8.RuneError || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}
