package toolfs

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/tool"
)

// ListEntry is one entry of a listing.
type ListEntry struct {
	Name string `json:"name" jsonschema:"the entry's name"`
	Type string `json:"type" jsonschema:"file, directory or other"`
	Size *int64 `json:"size,omitempty" jsonschema:"size in bytes, for files"`
	// Reason says why an entry of type other has no metadata.
	Reason string `json:"reason,omitempty" jsonschema:"why the entry's metadata could not be read (type other only)"`
}

// ListValue is the structured result of list.
type ListValue struct {
	Path         string      `json:"path" jsonschema:"the display path of the directory"`
	Offset       int         `json:"offset" jsonschema:"the 1-based first entry returned"`
	Entries      []ListEntry `json:"entries" jsonschema:"the returned entries, in byte order of their names"`
	TotalEntries int         `json:"totalEntries" jsonschema:"the number of entries in the directory"`
}

// List returns the list tool: a directory's entries with type and size. The
// original has no listing tool; an MCP client without a shell needs one. It
// runs in parallel with other calls.
func (t *Tools) List() *tool.Tool {
	return &tool.Tool{
		Name:        "list",
		Description: "List a directory's entries with their type and size.",
		InputSchema: object(
			prop{name: "path", schema: str("Directory to list, resolved by the filesystem backend. Defaults to the session's working directory.")},
			prop{name: "offset", schema: positive("1-based first entry to return. Defaults to 1.")},
			prop{name: "limit", schema: positive("Maximum number of entries to return. Defaults to " + strconv.Itoa(t.cfg.ListLimit) + ".")},
		),
		OutputSchema: outputSchema[ListValue](),
		Annotations:  tool.Annotations{ReadOnly: true, Idempotent: true},
		Handler:      t.list,
	}
}

func (t *Tools) list(ctx context.Context, call tool.Call) tool.Result {
	a, err := parseArgs(call.Arguments)
	if err != nil {
		return t.failure(err, nil)
	}
	path := "."
	if a.present("path") {
		if path, err = a.path("path"); err != nil {
			return t.failure(err, nil)
		}
	}
	offset, err := a.optPositive("offset", 1)
	if err != nil {
		return t.failure(err, nil)
	}
	limit, err := a.optPositive("limit", t.cfg.ListLimit)
	if err != nil {
		return t.failure(err, nil)
	}
	if limit > t.cfg.ListLimit {
		return t.failure(badArg("limit must be less than or equal to "+strconv.Itoa(t.cfg.ListLimit)), nil)
	}
	policy := t.standing(call.Session)
	target, err := t.resolve(ctx, call.Session, policy, path)
	if err != nil {
		return t.failure(err, policy)
	}
	window := fs.ListWindow{Offset: offset, Limit: limit}
	if call.Progress != nil {
		// The number of names is unknown until they are all read.
		window.Progress = func(names int) { call.Progress(float64(names), 0) }
	}
	listing, err := t.deps.FS.ListDir(ctx, target, window)
	if err != nil {
		return t.failure(err, policy)
	}
	dp := target.DisplayPath
	total := listing.Total
	if offset > total && (offset != 1 || total != 0) {
		return t.failure(&fs.Error{
			Code: fs.CodeNotFound, Op: "list", Path: dp,
			Message: "offset " + strconv.Itoa(offset) + " is out of range for " + strconv.Quote(dp) + " (" + strconv.Itoa(total) + " entries)",
		}, policy)
	}
	page := listing.Entries
	value := ListValue{Path: dp, Offset: offset, Entries: make([]ListEntry, 0, len(page)), TotalEntries: total}
	var b strings.Builder
	b.WriteString("<path>" + dp + "</path>\n<type>directory</type>\n<entries>\n")
	for _, e := range page {
		value.Entries = append(value.Entries, ListEntry{Name: e.Name, Type: string(e.Type), Size: e.Size, Reason: e.Reason})
		b.WriteString(entryLine(e))
		b.WriteByte('\n')
	}
	if len(page) > 0 {
		b.WriteByte('\n')
	}
	end := offset - 1 + len(page)
	if end < total {
		b.WriteString("(Showing entries " + strconv.Itoa(offset) + "-" + strconv.Itoa(end) + " of " + strconv.Itoa(total) +
			". Use offset=" + strconv.Itoa(end+1) + " to continue.)")
	} else {
		b.WriteString("(End of directory - total " + strconv.Itoa(total) + " entries)")
	}
	b.WriteString("\n</entries>")
	return tool.Result{Text: b.String(), Value: value}
}

// entryLine is one compact line of the listing: "name/" for a directory,
// "name (N bytes)" for a file, "name (other)" for anything else, or
// "name (other: <reason>)" when its metadata could not be read, the name
// rendered by displayName.
func entryLine(e fs.DirEntry) string {
	name := displayName(e.Name)
	switch {
	case e.Type == fs.TypeDirectory:
		return name + "/"
	case e.Type == fs.TypeFile && e.Size != nil:
		return name + " (" + strconv.FormatInt(*e.Size, 10) + " bytes)"
	case e.Reason != "":
		return name + " (other: " + e.Reason + ")"
	default:
		return name + " (other)"
	}
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
