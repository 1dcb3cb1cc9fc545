package toolfs

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/tool"
)

// WriteValue is the structured result of write: spec section 1 plus Diff,
// the unified diff of the applied change ("" when the prior content is
// unknown or unchanged). Before and After are carried only when neither
// is longer than Config.ResultTextMaxBytes; otherwise both are left out of
// the JSON and TextsOmitted is true (issue 15). When carried, a nil Before
// is sent as null (a create).
type WriteValue struct {
	Path         string  `json:"path" jsonschema:"the display path of the file"`
	Operation    string  `json:"operation" jsonschema:"create or update"`
	Before       *string `json:"before,omitempty" jsonschema:"the prior text, LF-normalized, or null on a create; absent when textsOmitted"`
	After        string  `json:"after,omitempty" jsonschema:"the written text, LF-normalized; absent when textsOmitted"`
	TextsOmitted bool    `json:"textsOmitted,omitempty" jsonschema:"true when before and after are left out because one exceeds the result text limit (the diff shows the change)"`
	Diff         string  `json:"diff" jsonschema:"unified diff of the change with 3 lines of context"`
	Note         string  `json:"note,omitempty" jsonschema:"what changed in the file's bytes beyond its text (byte-order mark, line endings), if anything"`
	DryRun       bool    `json:"dryRun,omitempty" jsonschema:"true when nothing was written (dry_run)"`
}

// MarshalJSON sends before (null on a create) and after whenever they are
// carried, even empty.
func (v WriteValue) MarshalJSON() ([]byte, error) {
	type wire WriteValue
	if v.TextsOmitted {
		v.Before, v.After = nil, ""
		return json.Marshal(wire(v))
	}
	return json.Marshal(struct {
		Path      string  `json:"path"`
		Operation string  `json:"operation"`
		Before    *string `json:"before"`
		After     string  `json:"after"`
		Diff      string  `json:"diff"`
		Note      string  `json:"note,omitempty"`
		DryRun    bool    `json:"dryRun,omitempty"`
	}{v.Path, v.Operation, v.Before, v.After, v.Diff, v.Note, v.DryRun})
}

// Write returns the write tool (T-52..T-61): create or fully replace a file.
// It runs exclusively.
func (t *Tools) Write() *tool.Tool {
	props := []prop{
		{name: "file_path", schema: str("Path to write, resolved by the filesystem backend."), required: true},
		{name: "content", schema: str("Full UTF-8 text content to write."), required: true},
		{name: "dry_run", schema: boolean("Return the diff without writing. Defaults to false.")},
	}
	return t.g.Tool(tool.Tool{
		Name:         "write",
		Description:  "Create or fully replace a UTF-8 text file.",
		InputSchema:  object(props...),
		OutputSchema: outputSchema[WriteValue](),
		Annotations:  tool.Annotations{Destructive: true, Idempotent: true},
	}, true, t.write)
}

func (t *Tools) write(ctx context.Context, call *guard.Call) tool.Result {
	a := args(call.Args)
	path, err := a.path("file_path")
	if err != nil {
		return t.g.Fail(err, nil)
	}
	content, err := a.text("content")
	if err != nil {
		return t.g.Fail(err, nil)
	}
	if err := t.checkSize("content", len(content)); err != nil {
		return t.g.Fail(err, nil)
	}
	dryRun, err := a.optBool("dry_run", false)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	policy, target, err := t.mutationTarget(ctx, call, fmt.Sprintf("write %d bytes (the whole file)", len(content)), path)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	done, err := t.serial.acquire(ctx, "write", call.Session.Owner(), target)
	if err != nil {
		return t.g.Fail(err, policy)
	}
	defer done()
	intent := fs.UnconditionalWrite()
	if t.deps.Intents != nil {
		if intent, err = t.deps.Intents.WriteIntent(ctx, call.Session.Owner(), target); err != nil {
			return t.g.Fail(err, policy)
		}
	}
	out, err := t.deps.FS.WriteText(ctx, target, content, fs.WriteOptions{Intent: intent, Policy: policy, DryRun: dryRun})
	if err != nil {
		return t.g.Fail(err, policy)
	}
	dp := target.DisplayPath
	created := out.Operation == fs.OpCreate
	value := WriteValue{
		Path: dp, Operation: string(out.Operation), Before: out.Before, After: out.After,
		Diff: unifiedDiff(dp, out.Before, out.After, created), Note: out.Note, DryRun: dryRun,
	}
	if !t.carriesTexts(out.Before, out.After) {
		value.Before, value.After, value.TextsOmitted = nil, "", true
	}
	if dryRun {
		verb := "updated"
		if created {
			verb = "created"
		}
		return tool.Result{Text: dryRunText(dp, verb, value.Diff), Value: value}
	}
	audit.FromContext(ctx).Update(func(r *audit.Record) { r.Bytes = int64(len(out.After)) })
	// An observer's error fails the call although the mutation is on disk
	// (T-83).
	if err := t.observe(call.Session, target, fs.Observation{Kind: fs.Present, Version: out.Version}); err != nil {
		return t.g.Fail(err, policy)
	}
	verb := "Updated file"
	if created {
		verb = "Created file"
	}
	verb += inPlaceNote(out.InPlace)
	return tool.Result{
		Text:  "<path>" + dp + "</path>\n<type>file</type>\n<content>\n" + withNote(verb, out.Note) + "\n</content>",
		Value: value,
	}
}

// checkSize refuses an argument larger than WriteMaxBytes, before anything is
// resolved or written.
func (t *Tools) checkSize(name string, n int) error {
	if n <= t.cfg.WriteMaxBytes {
		return nil
	}
	return &fs.Error{
		Code: fs.CodeTooLarge, Op: "write",
		Message: name + " of " + strconv.Itoa(n) + " bytes exceeds the " + strconv.Itoa(t.cfg.WriteMaxBytes) + "-byte limit",
	}
}

// carriesTexts reports whether a result's structured value carries the
// before and after texts: each at most Config.ResultTextMaxBytes bytes.
func (t *Tools) carriesTexts(before *string, after string) bool {
	return (before == nil || len(*before) <= t.cfg.ResultTextMaxBytes) && len(after) <= t.cfg.ResultTextMaxBytes
}

// withNote appends the outcome's note on what changed beyond the text, as
// its own line, to a result text (spec difference 10).
func withNote(text, note string) string {
	if note == "" {
		return text
	}
	return text + "\n" + note
}

// inPlaceNote is the line a result adds when the backend rewrote the file in
// place instead of replacing it atomically (spec difference 9), else "".
func inPlaceNote(why string) string {
	if why == "" {
		return ""
	}
	return "\nThe file was rewritten in place, not atomically: " + why + "."
}
