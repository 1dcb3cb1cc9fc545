package toolfs

import (
	"context"
	"strconv"
	"strings"

	"github.com/dsh-go/harness/internal/textfile"
	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/tool"
)

// ReadValue is the structured result of read (spec section 1).
type ReadValue struct {
	Path       string      `json:"path" jsonschema:"the display path of the file"`
	Offset     int         `json:"offset" jsonschema:"the 1-based first line requested"`
	Lines      []Line      `json:"lines" jsonschema:"the returned lines"`
	TotalLines *int        `json:"totalLines,omitempty" jsonschema:"the number of lines in the whole file; absent when counting them would scan too much of a huge file"`
	Image      *ImageValue `json:"image,omitempty" jsonschema:"the image shown as image content instead of lines, for a PNG, JPEG, GIF or WebP file"`
}

// Read returns the read tool (T-18..T-51): a line-numbered window of a UTF-8
// text file. It runs in parallel with other calls.
func (t *Tools) Read() *tool.Tool {
	return t.g.Tool(tool.Tool{
		Name:        "read",
		Description: "Read a UTF-8 text file and return line-numbered content.",
		InputSchema: object(
			prop{name: "file_path", schema: str("Path to read, resolved by the filesystem backend."), required: true},
			prop{name: "offset", schema: positive("1-based first line to return. Defaults to 1.")},
			prop{name: "limit", schema: atMost(positive("Maximum number of lines to return. Defaults to "+strconv.Itoa(t.cfg.ReadLimit)+"."), t.cfg.ReadLimit)},
		),
		OutputSchema: outputSchema[ReadValue](),
		Annotations:  tool.Annotations{ReadOnly: true, Idempotent: true},
	}, true, t.read)
}

func (t *Tools) read(ctx context.Context, call *guard.Call) tool.Result {
	a := args(call.Args)
	// Validation order: file_path, offset, limit, the limit cap (T-24).
	path, err := a.path("file_path")
	if err != nil {
		return t.g.Fail(err, nil)
	}
	offset, err := a.optPositive("offset", 1)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	limit, err := a.optPositive("limit", t.cfg.ReadLimit)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	if limit > t.cfg.ReadLimit {
		return t.g.Fail(guard.BadArg("limit must be less than or equal to "+strconv.Itoa(t.cfg.ReadLimit)), nil)
	}
	esc, err := call.Escalation()
	if err != nil {
		return t.g.Fail(err, nil)
	}
	policy := call.Standing()
	target, err := t.resolve(ctx, call.Session, policy, path)
	if err != nil {
		return t.g.Fail(err, policy)
	}
	done, err := t.serial.acquire(ctx, "read", call.Session.Owner(), target)
	if err != nil {
		return t.g.Fail(err, policy)
	}
	defer done()
	res := t.readTarget(ctx, call, policy, target, offset, limit)
	if fs.CodeOf(res.Err) == fs.CodeReadDenied {
		return t.readDenied(ctx, call, esc, policy, path, target, res.Err, func(approved fs.Target) tool.Result {
			return t.readTarget(ctx, call, policy, approved, offset, limit)
		})
	}
	return res
}

// readTarget is the read of target once resolved and serialized: the
// window of lines from offset, at most limit of them, or the image.
func (t *Tools) readTarget(ctx context.Context, call *guard.Call, policy *sandbox.ExecutionPolicy, target fs.Target, offset, limit int) tool.Result {
	dp := target.DisplayPath
	// Exactly one stat per read (T-33).
	info, err := t.deps.FS.Stat(ctx, target)
	if err != nil {
		return t.g.Fail(err, policy)
	}
	if info == nil {
		// A failed read records absence first (T-25).
		if err := t.observe(call.Session, target, fs.Observation{Kind: fs.Absent}); err != nil {
			return t.g.Fail(err, policy)
		}
		return t.g.Fail(&fs.Error{Code: fs.CodeNotFound, Op: "read", Path: dp, Message: "cannot read " + strconv.Quote(dp) + ": not found"}, policy)
	}
	if info.Type != fs.TypeFile {
		return t.g.Fail(&fs.Error{Code: fs.CodeNotRegularFile, Op: "read", Path: dp, Message: "cannot read " + strconv.Quote(dp) + ": not a regular file"}, policy)
	}
	w := newWindow(offset, limit, t.cfg.ReadMaxLineLength, t.cfg.ReadMaxBytes)
	content, err := t.fill(ctx, w, target, info, call.Progress)
	if fs.CodeOf(err) == fs.CodeNotText {
		if res, ok := t.readImage(ctx, call, target, info); ok {
			return res
		}
		// A file that is not text was still seen, by version: a
		// deliberate whole-file write may replace it (issue 13, item 10).
		if err := t.observe(call.Session, target, fs.Observation{Kind: fs.Present, Version: info.Version}); err != nil {
			return t.g.Fail(err, policy)
		}
	}
	if err != nil {
		return t.g.Fail(err, policy)
	}
	if w.outOfRange() {
		// Out of range records nothing (T-32).
		return t.g.Fail(offsetPastEnd(dp, offset, w.total, false, "lines", "file"), policy)
	}
	// A windowed read observes the whole-file version (O-14, T-31), and
	// the content it streamed (spec difference 14).
	if err := t.observe(call.Session, target, fs.Observation{Kind: fs.Present, Version: info.Version, Content: content}); err != nil {
		return t.g.Fail(err, policy)
	}
	audit.FromContext(ctx).Update(func(r *audit.Record) { r.Bytes = int64(w.bytes) })
	value := ReadValue{Path: dp, Offset: offset, Lines: w.lines, TotalLines: w.totalLines()}
	if value.Lines == nil {
		value.Lines = []Line{}
	}
	return tool.Result{Text: renderRead(dp, w), Value: value}
}

// fill feeds the file into the window: whole below ReadStreamMinSize, else,
// or when the size is unknown (0, as procfs reports), in chunks with bounded
// memory, counting lines past the window within a budget (T-09, T-27, spec
// decision 17). A streamed read reports the bytes fed so far to progress,
// out of the file's size (0 when unknown), when progress is set. It hashes
// the text as it goes and returns the fingerprint of the whole file, size
// from info, only when it saw all of it (spec difference 14); a read that
// stops early returns the zero fingerprint.
func (t *Tools) fill(ctx context.Context, w *window, target fs.Target, info *fs.Info, progress tool.Progress) (fs.Fingerprint, error) {
	hash := textfile.NewTextHash()
	if info.Size > 0 && info.Size < t.cfg.ReadStreamMinSize {
		text, err := t.deps.FS.ReadText(ctx, target)
		if err != nil {
			return fs.Fingerprint{}, err
		}
		hash.Write(text)
		w.feed(text)
		w.finish()
		return fs.Fingerprint{Size: info.Size, Hash: fs.ContentHash(hash.Sum())}, nil
	}
	w.budget = countBudgetBytes
	fed := 0
	for chunk, err := range t.deps.FS.StreamText(ctx, target) {
		if err != nil {
			return fs.Fingerprint{}, err
		}
		hash.Write(chunk)
		if !w.feed(chunk) {
			w.finish()
			return fs.Fingerprint{}, nil
		}
		if fed += len(chunk); progress != nil {
			progress(float64(fed), float64(info.Size), "")
		}
	}
	w.finish()
	return fs.Fingerprint{Size: info.Size, Hash: fs.ContentHash(hash.Sum())}, nil
}

// renderRead is the exact read envelope (spec section 1).
func renderRead(dp string, w *window) string {
	var b strings.Builder
	b.WriteString("<path>" + dp + "</path>\n<type>file</type>\n<content>\n")
	for i, l := range w.lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strconv.Itoa(l.Number))
		b.WriteString(": ")
		b.WriteString(l.Text)
	}
	if len(w.lines) > 0 {
		b.WriteString("\n\n")
	}
	b.WriteString(w.footer())
	b.WriteString("\n</content>")
	return b.String()
}
