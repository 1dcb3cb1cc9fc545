package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	fastjson "github.com/segmentio/encoding/json"
)

// Filter selects records; a zero field selects every record.
type Filter struct {
	// Session selects the records of one session.
	Session string
	// Principal selects the records of one principal (an HTTP session's
	// token subject).
	Principal string
	// Since and Until select the records whose Time is at or after Since
	// and before Until.
	Since, Until time.Time
	// Tools selects the records of any of these tools.
	Tools []string
	// Decision selects the records of one decision.
	Decision Decision
	// Path selects the records that name Path or a path beneath it (as a
	// directory: /a/b selects /a/b and /a/b/c, not /a/bc) among their
	// Paths, their Changes or their command's working directory.
	Path string
}

// Match reports whether f selects r.
func (f Filter) Match(r Record) bool {
	switch {
	case f.Session != "" && r.Session != f.Session,
		f.Principal != "" && r.Principal != f.Principal,
		f.Decision != "" && r.Decision != f.Decision,
		len(f.Tools) > 0 && !slices.Contains(f.Tools, r.Tool),
		!f.Since.IsZero() && r.Time.Before(f.Since),
		!f.Until.IsZero() && !r.Time.Before(f.Until):
		return false
	case f.Path == "":
		return true
	}
	for _, p := range r.Paths {
		if under(p, f.Path) {
			return true
		}
	}
	for _, c := range r.Changes {
		if under(c.Path, f.Path) {
			return true
		}
	}
	return r.Command != nil && under(r.Command.Workdir, f.Path)
}

// under reports whether p is dir or a path beneath it (a trailing slash
// of dir is ignored).
func under(p, dir string) bool {
	dir = strings.TrimSuffix(dir, "/")
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// Files returns the files of the log at path that exist, oldest first: its
// rotated files (path.N ... path.1, highest number first), then path. The
// error is a failure to list the directory (none when it is missing).
func Files(path string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	base := filepath.Base(path)
	type numbered struct {
		n    int
		name string
	}
	var rotated []numbered
	current := false
	for _, e := range ents {
		if e.Name() == base {
			current = true
			continue
		}
		if rest, ok := strings.CutPrefix(e.Name(), base+"."); ok {
			if n, err := strconv.Atoi(rest); err == nil && n > 0 && strconv.Itoa(n) == rest {
				rotated = append(rotated, numbered{n, e.Name()})
			}
		}
	}
	slices.SortFunc(rotated, func(a, b numbered) int { return b.n - a.n })
	out := make([]string, 0, len(rotated)+1)
	for _, r := range rotated {
		out = append(out, filepath.Join(filepath.Dir(path), r.name))
	}
	if current {
		out = append(out, path)
	}
	return out, nil
}

// ReadStats is what Read met besides the records it selected.
type ReadStats struct {
	// Files is the number of files read.
	Files int
	// Skipped counts the lines that are not records: a last line a crash
	// or a full disk cut short (no newline), or a fragment a failed write
	// left (ended by the log's next write).
	Skipped int
}

// Read calls fn, oldest first, with each record of the log at path and its
// rotated files (Files) that f selects, and the record's line as written
// (without its newline; valid only during the call). Lines that are not
// records are skipped and counted. A line is decoded (with
// segmentio/encoding, a faster decoder of the same JSON) only when it can
// match: the session, tools, decision and path are first looked for in its
// raw bytes, and its time read from its start. An error of fn stops the
// reading and is returned; so is a file that cannot be read.
func Read(path string, f Filter, fn func(r Record, line []byte) error) (ReadStats, error) {
	var st ReadStats
	files, err := Files(path)
	if err != nil {
		return st, err
	}
	pre := newPrefilter(f)
	buf := bufio.NewReaderSize(nil, 1<<20)
	var long []byte // a line longer than buf
	for _, name := range files {
		file, err := os.Open(name)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // rotated away since it was listed
			}
			return st, err
		}
		st.Files++
		buf.Reset(file)
		for {
			line, err := buf.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				long = append(long[:0], line...)
				for errors.Is(err, bufio.ErrBufferFull) {
					line, err = buf.ReadSlice('\n')
					long = append(long, line...)
				}
				line = long
			}
			if err != nil {
				if len(line) > 0 {
					st.Skipped++ // a last line without its newline: torn
				}
				_ = file.Close()
				if !errors.Is(err, io.EOF) {
					return st, fmt.Errorf("%s: %w", name, err)
				}
				break
			}
			line = line[:len(line)-1]
			if !pre.may(line) {
				continue
			}
			var r Record
			if fastjson.Unmarshal(line, &r) != nil || r.Time.IsZero() && r.Tool == "" {
				st.Skipped++
				continue
			}
			if !f.Match(r) {
				continue
			}
			if err := fn(r, line); err != nil {
				_ = file.Close()
				return st, err
			}
		}
	}
	return st, nil
}

// prefilter rejects, on a line's raw bytes, what f cannot select: each
// needle is a JSON fragment the line must hold (or one of them, for the
// tools), and the time the line starts with must be in range.
type prefilter struct {
	f       Filter
	all     [][]byte // each must occur
	anyTool [][]byte // one must occur (when any)
}

func newPrefilter(f Filter) prefilter {
	p := prefilter{f: f}
	if f.Session != "" {
		p.all = append(p.all, field("session", f.Session))
	}
	if f.Principal != "" {
		p.all = append(p.all, field("principal", f.Principal))
	}
	if f.Decision != "" {
		p.all = append(p.all, field("decision", string(f.Decision)))
	}
	if f.Path != "" {
		// The path's encoding without its closing quote is a prefix of
		// the encoding of every path beneath it.
		enc := jsonString(strings.TrimSuffix(f.Path, "/"))
		p.all = append(p.all, enc[:len(enc)-1])
	}
	for _, t := range f.Tools {
		p.anyTool = append(p.anyTool, field("tool", t))
	}
	return p
}

// may reports whether line may hold a record the filter selects.
func (p prefilter) may(line []byte) bool {
	for _, n := range p.all {
		if !bytes.Contains(line, n) {
			return false
		}
	}
	if len(p.anyTool) > 0 && !slices.ContainsFunc(p.anyTool, func(n []byte) bool { return bytes.Contains(line, n) }) {
		return false
	}
	if p.f.Since.IsZero() && p.f.Until.IsZero() {
		return true
	}
	t, ok := lineTime(line)
	return !ok || (p.f.Since.IsZero() || !t.Before(p.f.Since)) && (p.f.Until.IsZero() || t.Before(p.f.Until))
}

// timePrefix starts every line the log writes: Time is Record's first
// field.
var timePrefix = []byte(`{"time":"`)

// lineTime reads the time a line starts with; false when it does not
// start as the log writes (the decoded record decides then).
func lineTime(line []byte) (time.Time, bool) {
	rest, ok := bytes.CutPrefix(line, timePrefix)
	if !ok {
		return time.Time{}, false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:end]))
	return t, err == nil
}

// field returns the JSON of one string member, as Marshal writes it.
func field(name, value string) []byte {
	return append(append(jsonString(name), ':'), jsonString(value)...)
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}
