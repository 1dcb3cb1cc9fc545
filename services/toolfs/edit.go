package toolfs

import (
	"context"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/tool"
)

// EditValue is the structured result of edit: spec section 1 plus Diff and
// Replacements.
type EditValue struct {
	Path         string `json:"path" jsonschema:"the display path of the file"`
	Before       string `json:"before" jsonschema:"the prior text, LF-normalized"`
	After        string `json:"after" jsonschema:"the new text, LF-normalized"`
	Diff         string `json:"diff" jsonschema:"unified diff of the change with 3 lines of context"`
	Replacements int    `json:"replacements" jsonschema:"how many matches were replaced"`
	Note         string `json:"note,omitempty" jsonschema:"what changed in the file's bytes beyond its text (byte-order mark), if anything"`
}

// Edit returns the edit tool (T-62..T-79): replace a literal in a file. It
// runs exclusively.
func (t *Tools) Edit() *tool.Tool {
	props := []prop{
		{name: "file_path", schema: str("Path to edit, resolved by the filesystem backend."), required: true},
		{name: "old_string", schema: str("Literal text to replace. Must match exactly."), required: true},
		{name: "new_string", schema: str("Literal replacement text. Use an empty string to delete the match."), required: true},
		{name: "replace_all", schema: boolean("Replace all matches. Defaults to false; when false, old_string must appear exactly once.")},
	}
	return &tool.Tool{
		Name:         "edit",
		Description:  "Edit an existing UTF-8 text file by replacing literal text.",
		InputSchema:  object(append(props, t.escalationProps()...)...),
		OutputSchema: outputSchema[EditValue](),
		Annotations:  tool.Annotations{Destructive: true},
		Exclusive:    true,
		Handler:      t.edit,
	}
}

func (t *Tools) edit(ctx context.Context, call tool.Call) tool.Result {
	a, err := parseArgs(call.Arguments)
	if err != nil {
		return t.failure(err, nil)
	}
	// Validation order: file_path, old_string empty, equality (T-65).
	path, err := a.path("file_path")
	if err != nil {
		return t.failure(err, nil)
	}
	oldString, err := a.text("old_string")
	if err != nil {
		return t.failure(err, nil)
	}
	if oldString == "" {
		return t.failure(badArg("old_string must be a non-empty string"), nil)
	}
	newString, err := a.text("new_string")
	if err != nil {
		return t.failure(err, nil)
	}
	if oldString == newString {
		return t.failure(badArg("old_string and new_string must differ"), nil)
	}
	if err := t.checkSize("new_string", len(newString)); err != nil {
		return t.failure(err, nil)
	}
	replaceAll, err := a.optBool("replace_all", false)
	if err != nil {
		return t.failure(err, nil)
	}
	policy, target, err := t.mutationTarget(ctx, call, "edit", a, path)
	if err != nil {
		return t.failure(err, nil)
	}
	done, err := t.serial.acquire(ctx, "edit", call.Session.Owner(), target)
	if err != nil {
		return t.failure(err, policy)
	}
	defer done()
	req := fs.EditRequest{
		OldString: oldString, NewString: newString, ReplaceAll: replaceAll, Policy: policy,
		MaxBytes: int64(t.cfg.WriteMaxBytes),
	}
	// The edit guard is decided inside the error mapping, so the policy's
	// own FS_NOT_OBSERVED gets the remedy too.
	if t.deps.Intents != nil {
		seen, err := t.deps.Intents.EditGuard(ctx, call.Session.Owner(), target)
		if err != nil {
			return t.failure(err, policy)
		}
		req.Version, req.Content = seen.Version, seen.Content
	}
	out, err := t.deps.FS.EditText(ctx, target, req)
	if err != nil {
		return t.failure(err, policy)
	}
	// An observer's error fails the call although the mutation is on disk
	// (T-83).
	if err := t.observe(call.Session, target, fs.Observation{Kind: fs.Present, Version: out.Version}); err != nil {
		return t.failure(err, policy)
	}
	dp := target.DisplayPath
	text := "The file " + dp + " has been updated successfully."
	if replaceAll {
		text = "The file " + dp + " has been updated. All occurrences were successfully replaced."
	}
	text += inPlaceNote(out.InPlace)
	return tool.Result{
		Text: withNote(text, out.Note),
		Value: EditValue{
			Path: dp, Before: out.Before, After: out.After, Replacements: out.Replacements,
			Diff: unifiedDiff(dp, &out.Before, out.After, false), Note: out.Note,
		},
	}
}
