package toolfs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/tool"
)

// Result caps of glob and grep: the default of limit, and its maximum.
const (
	defaultSearchLimit = 100
	maxSearchLimit     = fs.DefaultSearchLimit
)

// GlobEntry is one file glob found.
type GlobEntry struct {
	Path    string `json:"path" jsonschema:"slash-separated, relative to the base directory"`
	ModTime string `json:"modTime" jsonschema:"the modification time, RFC 3339"`
}

// GlobValue is the structured result of glob.
type GlobValue struct {
	Path       string      `json:"path" jsonschema:"the display path of the base directory"`
	Pattern    string      `json:"pattern" jsonschema:"the pattern searched for"`
	Files      []GlobEntry `json:"files" jsonschema:"the matching files, newest first"`
	Matched    int         `json:"matched" jsonschema:"the number of files that matched"`
	Truncated  bool        `json:"truncated" jsonschema:"whether matching files were left out (the limit, or the walk's entry cap)"`
	Unreadable int         `json:"unreadable" jsonschema:"entries skipped because they could not be read"`
	Denied     int         `json:"denied,omitempty" jsonschema:"entries skipped, never opened, because they are in the deny-read set"`
}

// GrepLine is one line of grep's content output.
type GrepLine struct {
	Number int    `json:"number" jsonschema:"the 1-based line number"`
	Text   string `json:"text" jsonschema:"the line, without its line ending, cut like read's lines"`
	Match  bool   `json:"match" jsonschema:"false for a context line"`
}

// GrepFile is one file with matches.
type GrepFile struct {
	Path  string     `json:"path" jsonschema:"slash-separated, relative to the base directory (the file's name when the path is a file)"`
	Count int        `json:"count,omitempty" jsonschema:"matching lines (count and content modes)"`
	Lines []GrepLine `json:"lines,omitempty" jsonschema:"matching and context lines in order (content mode)"`
}

// GrepValue is the structured result of grep.
type GrepValue struct {
	Path       string     `json:"path" jsonschema:"the display path searched"`
	Mode       string     `json:"mode" jsonschema:"files_with_matches, count or content"`
	Files      []GrepFile `json:"files" jsonschema:"the files with matches, depth first in byte order of names"`
	Truncated  bool       `json:"truncated" jsonschema:"whether results were left out (the limit, the byte cap of content mode, or the walk's entry cap)"`
	Omitted    int        `json:"omitted,omitempty" jsonschema:"matching lines left out by the byte cap of content mode (read's, 51200 bytes by default)"`
	Searched   int        `json:"searched" jsonschema:"the files searched"`
	Binary     int        `json:"binary" jsonschema:"files skipped as binary"`
	Unreadable int        `json:"unreadable" jsonschema:"entries skipped because they could not be read"`
	Denied     int        `json:"denied,omitempty" jsonschema:"entries skipped, never opened, because they are in the deny-read set"`
}

// scopeProps are the walk arguments glob and grep share.
func scopeProps() []prop {
	return []prop{
		{name: "include_hidden", schema: boolean("Include files and directories whose name starts with \".\" (.git is never searched). Defaults to false.")},
		{name: "no_ignore", schema: boolean("Also search what .gitignore files and .git/info/exclude exclude. Defaults to false.")},
	}
}

func searchLimitProp(what string) prop {
	return prop{name: "limit", schema: atMost(positive("Maximum number of "+what+" to return. Defaults to "+
		strconv.Itoa(defaultSearchLimit)+", at most "+strconv.Itoa(maxSearchLimit)+"."), maxSearchLimit)}
}

// Glob returns the glob tool: files by doublestar pattern, newest first
// (issue 16). It runs in parallel with other calls.
func (t *Tools) Glob() *tool.Tool {
	props := []prop{
		{name: "pattern", schema: str(`Doublestar pattern over paths relative to the base directory, such as "**/*.go" or "src/**/*.{ts,tsx}". A pattern without "/" matches a file name at any depth. No ".." elements.`), required: true},
		{name: "path", schema: str("Base directory, resolved by the filesystem backend. Defaults to the session's working directory.")},
	}
	props = append(props, scopeProps()...)
	props = append(props, searchLimitProp("files"))
	return t.g.Tool(tool.Tool{
		Name:         "glob",
		Description:  "Find files by name pattern, newest first; .gitignore-aware.",
		InputSchema:  object(props...),
		OutputSchema: outputSchema[GlobValue](),
		Annotations:  tool.Annotations{ReadOnly: true, Idempotent: true},
	}, false, t.glob)
}

// searchArgs reads the arguments glob and grep share: the base path, the
// scope and the limit.
func searchArgs(a args) (path string, scope fs.SearchScope, limit int, err error) {
	path = "."
	if a.present("path") {
		if path, err = a.path("path"); err != nil {
			return "", scope, 0, err
		}
	}
	if scope.Hidden, err = a.optBool("include_hidden", false); err != nil {
		return "", scope, 0, err
	}
	if scope.NoIgnore, err = a.optBool("no_ignore", false); err != nil {
		return "", scope, 0, err
	}
	if limit, err = a.optPositive("limit", defaultSearchLimit); err != nil {
		return "", scope, 0, err
	}
	if limit > maxSearchLimit {
		return "", scope, 0, guard.BadArg("limit must be less than or equal to " + strconv.Itoa(maxSearchLimit))
	}
	return path, scope, limit, nil
}

// pattern returns the non-empty string argument name.
func (a args) pattern(name string) (string, error) {
	var s string
	if !a.present(name) || json.Unmarshal(a[name], &s) != nil || s == "" {
		return "", guard.BadArg(name + " must be a non-empty string")
	}
	return s, nil
}

// optNonNegative returns the whole-number argument name in [0, maxValue], def
// when absent.
func (a args) optNonNegative(name string, def, maxValue int) (int, error) {
	if !a.present(name) {
		return def, nil
	}
	var f float64
	if json.Unmarshal(a[name], &f) != nil || f < 0 || f > float64(maxValue) || f != math.Trunc(f) {
		return 0, guard.BadArg(name + " must be an integer between 0 and " + strconv.Itoa(maxValue))
	}
	return int(f), nil
}

// searchFailure renders a failed search of call: a pattern or option the
// backend refuses is an argument error like any other; a base in the
// deny-read set is refused under the call's mode.
func (t *Tools) searchFailure(call *guard.Call, err error) tool.Result {
	if fe, ok := errors.AsType[*fs.Error](err); ok && fe.Code == fs.CodeInvalidSearch {
		return t.g.Fail(guard.BadArg(fe.Message), nil)
	}
	return t.g.Fail(err, call.Standing())
}

func (t *Tools) glob(ctx context.Context, call *guard.Call) tool.Result {
	a := args(call.Args)
	pattern, err := a.pattern("pattern")
	if err != nil {
		return t.g.Fail(err, nil)
	}
	path, scope, limit, err := searchArgs(a)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	base, err := t.resolve(ctx, call.Session, call.Standing(), path)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	res, err := t.deps.FS.Glob(ctx, base, fs.GlobOptions{Pattern: pattern, SearchScope: scope, Limit: limit})
	if err != nil {
		return t.searchFailure(call, err)
	}
	value := GlobValue{
		Path: base.DisplayPath, Pattern: pattern, Files: make([]GlobEntry, len(res.Files)),
		Matched: res.Matched, Truncated: res.Truncated, Unreadable: res.Unreadable, Denied: res.Denied,
	}
	var b strings.Builder
	b.WriteString("<path>" + base.DisplayPath + "</path>\n<files>\n")
	for i, f := range res.Files {
		value.Files[i] = GlobEntry{Path: f.Path, ModTime: f.ModTime.UTC().Format(time.RFC3339Nano)}
		b.WriteString(pathLine(f.Path) + "\n")
	}
	if len(res.Files) > 0 {
		b.WriteByte('\n')
	}
	var notes []string
	switch {
	case res.Matched == 0:
		notes = append(notes, "No files match.")
	case res.Matched > len(res.Files):
		notes = append(notes, "Showing the "+strconv.Itoa(len(res.Files))+" newest of "+strconv.Itoa(res.Matched)+
			" matching files. Narrow the pattern or the path, or raise limit (at most "+strconv.Itoa(maxSearchLimit)+").")
	default:
		notes = append(notes, plural(res.Matched, "matching file")+", newest first.")
	}
	notes = append(notes, searchNotes(res.WalkCapped, 0, res.Unreadable, res.Denied)...)
	b.WriteString("(" + strings.Join(notes, " ") + ")\n</files>")
	return tool.Result{Text: b.String(), Value: value}
}

// Grep returns the grep tool: lines matching a regular expression or a
// literal, as files, counts or lines with context (issue 16). It runs in
// parallel with other calls.
func (t *Tools) Grep() *tool.Tool {
	props := []prop{
		{name: "pattern", schema: str(`RE2 regular expression (Go syntax) matched against one line at a time, or a literal string with literal: true.`), required: true},
		{name: "literal", schema: boolean("Search for pattern as a plain string. Defaults to false.")},
		{name: "ignore_case", schema: boolean("Match letters in either case. Defaults to false.")},
		{name: "path", schema: str("Directory or file to search, resolved by the filesystem backend. Defaults to the session's working directory.")},
		{name: "glob", schema: str(`Search only files whose path relative to the directory matches this doublestar pattern, such as "*.go" (any depth) or "src/**/*.ts".`)},
		{name: "output_mode", schema: &jsonschema.Schema{
			Type: "string", Enum: []any{string(fs.GrepFiles), string(fs.GrepCount), string(fs.GrepContent)},
			Description: "files_with_matches (default): the paths of matching files; count: matching lines per file; content: the matching lines with their numbers.",
		}},
		{name: "context", schema: &jsonschema.Schema{
			Type: "integer", Minimum: jsonschema.Ptr(0.0), Maximum: jsonschema.Ptr(float64(fs.MaxGrepContext)),
			Description: "Lines shown before and after each match in content mode. Defaults to 0.",
		}},
	}
	props = append(props, scopeProps()...)
	props = append(props, searchLimitProp("results (files, or matching lines in content mode)"))
	return t.g.Tool(tool.Tool{
		Name:         "grep",
		Description:  "Search file contents for a regular expression or a literal; .gitignore-aware, binary files skipped.",
		InputSchema:  object(props...),
		OutputSchema: outputSchema[GrepValue](),
		Annotations:  tool.Annotations{ReadOnly: true, Idempotent: true},
	}, false, t.grep)
}

func (t *Tools) grep(ctx context.Context, call *guard.Call) tool.Result {
	a := args(call.Args)
	var err error
	opts := fs.GrepOptions{MaxLineLength: t.cfg.ReadMaxLineLength}
	if opts.Pattern, err = a.pattern("pattern"); err != nil {
		return t.g.Fail(err, nil)
	}
	if opts.Literal, err = a.optBool("literal", false); err != nil {
		return t.g.Fail(err, nil)
	}
	if opts.IgnoreCase, err = a.optBool("ignore_case", false); err != nil {
		return t.g.Fail(err, nil)
	}
	if opts.Glob, err = a.optText("glob"); err != nil {
		return t.g.Fail(err, nil)
	}
	mode, err := a.optText("output_mode")
	if err != nil {
		return t.g.Fail(err, nil)
	}
	switch opts.Mode = fs.GrepMode(mode); opts.Mode {
	case "":
		opts.Mode = fs.GrepFiles
	case fs.GrepFiles, fs.GrepCount, fs.GrepContent:
	default:
		return t.g.Fail(guard.BadArg("output_mode must be files_with_matches, count or content"), nil)
	}
	if opts.Context, err = a.optNonNegative("context", 0, fs.MaxGrepContext); err != nil {
		return t.g.Fail(err, nil)
	}
	path, scope, limit, err := searchArgs(a)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	opts.SearchScope, opts.Limit = scope, limit
	base, err := t.resolve(ctx, call.Session, call.Standing(), path)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	res, err := t.deps.FS.Grep(ctx, base, opts)
	if err != nil {
		return t.searchFailure(call, err)
	}
	var cut grepCut
	if opts.Mode == fs.GrepContent {
		res, cut = capGrepBytes(res, t.cfg.ReadMaxBytes)
	}
	return tool.Result{Text: renderGrep(base.DisplayPath, opts, res, cut, t.cfg.ReadMaxBytes), Value: grepValue(base.DisplayPath, opts.Mode, res, cut)}
}

func grepValue(dp string, mode fs.GrepMode, res fs.GrepResult, cut grepCut) GrepValue {
	v := GrepValue{
		Path: dp, Mode: string(mode), Files: make([]GrepFile, len(res.Files)), Omitted: cut.matches,
		Truncated: res.Truncated, Searched: res.Searched, Binary: res.Binary, Unreadable: res.Unreadable, Denied: res.Denied,
	}
	for i, f := range res.Files {
		gf := GrepFile{Path: f.Path}
		if mode != fs.GrepFiles {
			gf.Count = f.Count
		}
		for _, l := range f.Lines {
			gf.Lines = append(gf.Lines, GrepLine(l))
		}
		v.Files[i] = gf
	}
	return v
}

// renderGrep is grep's text: one path per file (files_with_matches), or
// "path: N" (count), or each file's path followed by its lines, "N: text"
// for a match and "N- text" for context, "--" between runs that are not
// adjacent (content); then a note, which says what a byte cap of maxBytes
// cut (content).
func renderGrep(dp string, opts fs.GrepOptions, res fs.GrepResult, cut grepCut, maxBytes int) string {
	var b strings.Builder
	b.WriteString("<path>" + dp + "</path>\n<matches>\n")
	results, lines := 0, 0
	for i, f := range res.Files {
		lines += f.Count
		switch opts.Mode {
		case fs.GrepCount:
			results++
			b.WriteString(pathLine(f.Path) + ": " + strconv.Itoa(f.Count) + "\n")
		case fs.GrepContent:
			results += f.Count
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(pathLine(f.Path) + "\n")
			for k, l := range f.Lines {
				if k > 0 && l.Number != f.Lines[k-1].Number+1 {
					b.WriteString("--\n")
				}
				sep := "- "
				if l.Match {
					sep = ": "
				}
				b.WriteString(strconv.Itoa(l.Number) + sep + l.Text + "\n")
			}
		default:
			results++
			b.WriteString(pathLine(f.Path) + "\n")
		}
	}
	if len(res.Files) > 0 {
		b.WriteByte('\n')
	}
	var notes []string
	switch {
	case cut.bytes > 0:
		notes = append(notes, "Showing "+plural(results, "matching line")+" in "+plural(len(res.Files), "file")+". "+cut.note(maxBytes))
	case len(res.Files) == 0:
		notes = append(notes, "No matches ("+plural(res.Searched, "file")+" searched).")
	case res.Truncated && results >= opts.Limit:
		shown := plural(results, "file") + " with matches"
		if opts.Mode == fs.GrepContent {
			shown = plural(results, "matching line")
		}
		notes = append(notes, "Showing only the first "+shown+"; more exist. Narrow the pattern, the path or the glob, or raise limit (at most "+strconv.Itoa(maxSearchLimit)+").")
	case opts.Mode == fs.GrepFiles:
		notes = append(notes, plural(len(res.Files), "file")+" with matches ("+strconv.Itoa(res.Searched)+" searched).")
	default:
		notes = append(notes, plural(lines, "matching line")+" in "+plural(len(res.Files), "file")+".")
	}
	notes = append(notes, searchNotes(res.WalkCapped, res.Binary, res.Unreadable, res.Denied)...)
	b.WriteString("(" + strings.Join(notes, " ") + ")\n</matches>")
	return b.String()
}

// searchNotes are the sentences about what a search left out.
func searchNotes(walkCapped bool, binary, unreadable, denied int) []string {
	var notes []string
	if walkCapped {
		notes = append(notes, "The search stopped after "+strconv.Itoa(fs.MaxSearchEntries)+" entries; later files were not considered. Narrow the path.")
	}
	if binary > 0 {
		notes = append(notes, plural(binary, "binary file")+" skipped.")
	}
	if unreadable > 0 {
		notes = append(notes, plural(unreadable, "unreadable entry")+" skipped.")
	}
	if denied > 0 {
		notes = append(notes, plural(denied, "entry")+" in the deny-read set skipped, not opened.")
	}
	return notes
}

// plural renders "1 file" or "n files" ("entry" becomes "entries").
func plural(n int, noun string) string {
	switch {
	case n == 1:
	case strings.HasSuffix(noun, "y"):
		noun = strings.TrimSuffix(noun, "y") + "ies"
	default:
		noun += "s"
	}
	return strconv.Itoa(n) + " " + noun
}

// pathLine renders a relative path on a line of its own: as is, or as a
// JSON string literal when it holds a control character, a line or
// paragraph separator, or invalid UTF-8 (a name could otherwise forge lines
// of the result).
func pathLine(p string) string {
	if utf8.ValidString(p) && strings.IndexFunc(p, func(r rune) bool {
		return unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
	}) < 0 {
		return p
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(p) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
