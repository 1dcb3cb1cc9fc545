package toolfs

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/tool"
)

// EditValue is the structured result of edit: spec section 1 plus Diff and
// Replacements. Before and After are carried only when neither is longer
// than Config.ResultTextMaxBytes; otherwise both are left out of the JSON
// and TextsOmitted is true (issue 15).
type EditValue struct {
	Path         string `json:"path" jsonschema:"the display path of the file"`
	Before       string `json:"before,omitempty" jsonschema:"the prior text, LF-normalized; absent when textsOmitted"`
	After        string `json:"after,omitempty" jsonschema:"the new text, LF-normalized; absent when textsOmitted"`
	TextsOmitted bool   `json:"textsOmitted,omitempty" jsonschema:"true when before and after are left out because one exceeds the result text limit (the diff shows the change)"`
	Diff         string `json:"diff" jsonschema:"unified diff of the change with 3 lines of context"`
	Replacements int    `json:"replacements" jsonschema:"how many matches were replaced"`
	Note         string `json:"note,omitempty" jsonschema:"what changed in the file's bytes beyond its text (byte-order mark), if anything"`
	DryRun       bool   `json:"dryRun,omitempty" jsonschema:"true when nothing was written (dry_run)"`
}

// MarshalJSON sends before and after whenever they are carried, even empty.
func (v EditValue) MarshalJSON() ([]byte, error) {
	type wire EditValue
	if v.TextsOmitted {
		v.Before, v.After = "", ""
		return json.Marshal(wire(v))
	}
	return json.Marshal(struct {
		Path         string `json:"path"`
		Before       string `json:"before"`
		After        string `json:"after"`
		Diff         string `json:"diff"`
		Replacements int    `json:"replacements"`
		Note         string `json:"note,omitempty"`
		DryRun       bool   `json:"dryRun,omitempty"`
	}{v.Path, v.Before, v.After, v.Diff, v.Replacements, v.Note, v.DryRun})
}

// Edit returns the edit tool (T-62..T-79): replace a literal in a file, or
// apply several replacements in order, all or none; with dry_run it returns
// the diff without writing. It runs exclusively.
func (t *Tools) Edit() *tool.Tool {
	replacement := object(
		prop{name: "old_string", schema: str("Literal text to replace, in the text the previous edits left. Must match exactly."), required: true},
		prop{name: "new_string", schema: str("Literal replacement text. Use an empty string to delete the match."), required: true},
		prop{name: "replace_all", schema: boolean("Replace all matches. Defaults to false; when false, old_string must appear exactly once.")},
	)
	props := []prop{
		{name: "file_path", schema: str("Path to edit, resolved by the filesystem backend."), required: true},
		{name: "old_string", schema: str("Literal text to replace. Must match exactly.")},
		{name: "new_string", schema: str("Literal replacement text. Use an empty string to delete the match.")},
		{name: "replace_all", schema: boolean("Replace all matches. Defaults to false; when false, old_string must appear exactly once.")},
		{name: "edits", schema: &jsonschema.Schema{
			Type: "array", Items: replacement, MinItems: jsonschema.Ptr(1),
			Description: "Several replacements applied in order, each to the text the previous one left, all or none. Instead of old_string, new_string and replace_all, never with them.",
		}},
		{name: "dry_run", schema: boolean("Return the diff without writing. Defaults to false.")},
	}
	return t.g.Tool(tool.Tool{
		Name:         "edit",
		Description:  "Edit an existing UTF-8 text file by replacing literal text.",
		InputSchema:  object(props...),
		OutputSchema: outputSchema[EditValue](),
		Annotations:  tool.Annotations{Destructive: true},
	}, true, t.edit)
}

// editArgs reads the replacements of an edit call: edits, or the top-level
// old_string, new_string and replace_all, never both (T-65 for each
// replacement: old_string empty, then equality, then the size cap).
func (t *Tools) editArgs(a args) ([]fs.Replacement, error) {
	if !a.present("edits") {
		r, err := t.replacementArgs(a, "")
		return []fs.Replacement{r}, err
	}
	if a.present("old_string") || a.present("new_string") || a.present("replace_all") {
		return nil, guard.BadArg("provide either edits or old_string and new_string, not both")
	}
	var items []json.RawMessage
	if json.Unmarshal(a["edits"], &items) != nil || len(items) == 0 {
		return nil, guard.BadArg("edits must be a non-empty array of objects")
	}
	out := make([]fs.Replacement, 0, len(items))
	total := 0
	for i, raw := range items {
		var item args
		prefix := "edits[" + strconv.Itoa(i) + "]."
		if json.Unmarshal(raw, &item) != nil || item == nil {
			return nil, guard.BadArg("edits[" + strconv.Itoa(i) + "] must be an object")
		}
		r, err := t.replacementArgs(item, prefix)
		if err != nil {
			return nil, err
		}
		total += len(r.NewString)
		out = append(out, r)
	}
	if err := t.checkSize("edits' new_string", total); err != nil {
		return nil, err
	}
	return out, nil
}

// replacementArgs reads one replacement; prefix names it within edits.
func (t *Tools) replacementArgs(a args, prefix string) (fs.Replacement, error) {
	oldString, err := a.text("old_string")
	if err != nil {
		return fs.Replacement{}, guard.BadArg(prefix + err.Error())
	}
	if oldString == "" {
		return fs.Replacement{}, guard.BadArg(prefix + "old_string must be a non-empty string")
	}
	newString, err := a.text("new_string")
	if err != nil {
		return fs.Replacement{}, guard.BadArg(prefix + err.Error())
	}
	if oldString == newString {
		return fs.Replacement{}, guard.BadArg(prefix + "old_string and new_string must differ")
	}
	if err := t.checkSize(prefix+"new_string", len(newString)); err != nil {
		return fs.Replacement{}, err
	}
	replaceAll, err := a.optBool("replace_all", false)
	if err != nil {
		return fs.Replacement{}, guard.BadArg(prefix + err.Error())
	}
	return fs.Replacement{OldString: oldString, NewString: newString, ReplaceAll: replaceAll}, nil
}

func (t *Tools) edit(ctx context.Context, call *guard.Call) tool.Result {
	a := args(call.Args)
	// Validation order: file_path, the replacements, dry_run (T-65).
	path, err := a.path("file_path")
	if err != nil {
		return t.g.Fail(err, nil)
	}
	edits, err := t.editArgs(a)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	dryRun, err := a.optBool("dry_run", false)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	policy, target, err := t.mutationTarget(ctx, call, editOperation(edits), path)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	done, err := t.serial.acquire(ctx, "edit", call.Session.Owner(), target)
	if err != nil {
		return t.g.Fail(err, policy)
	}
	defer done()
	req := fs.EditRequest{Policy: policy, MaxBytes: int64(t.cfg.WriteMaxBytes), DryRun: dryRun}
	if a.present("edits") {
		req.Edits = edits
	} else {
		req.OldString, req.NewString, req.ReplaceAll = edits[0].OldString, edits[0].NewString, edits[0].ReplaceAll
	}
	// The edit guard is decided inside the error mapping, so the policy's
	// own FS_NOT_OBSERVED gets the remedy too.
	if t.deps.Intents != nil {
		seen, err := t.deps.Intents.EditGuard(ctx, call.Session.Owner(), target)
		if err != nil {
			return t.g.Fail(err, policy)
		}
		req.Version, req.Content = seen.Version, seen.Content
	}
	out, err := t.deps.FS.EditText(ctx, target, req)
	if err != nil {
		return t.g.Fail(err, policy)
	}
	dp := target.DisplayPath
	diff := unifiedDiff(dp, &out.Before, out.After, false)
	value := EditValue{
		Path: dp, Before: out.Before, After: out.After, Replacements: out.Replacements,
		Diff: diff, Note: out.Note, DryRun: dryRun,
	}
	if !t.carriesTexts(&out.Before, out.After) {
		value.Before, value.After, value.TextsOmitted = "", "", true
	}
	if dryRun {
		return tool.Result{Text: dryRunText(dp, "updated", diff), Value: value}
	}
	audit.FromContext(ctx).Update(func(r *audit.Record) { r.Bytes = int64(len(out.After)) })
	// An observer's error fails the call although the mutation is on disk
	// (T-83).
	if err := t.observe(call.Session, target, fs.Observation{Kind: fs.Present, Version: out.Version}); err != nil {
		return t.g.Fail(err, policy)
	}
	text := "The file " + dp + " has been updated successfully."
	if req.ReplaceAll {
		text = "The file " + dp + " has been updated. All occurrences were successfully replaced."
	}
	if len(req.Edits) > 0 {
		text = "The file " + dp + " has been updated: " + strconv.Itoa(len(req.Edits)) + " edits applied (" + strconv.Itoa(out.Replacements) + " replacements)."
	}
	text += inPlaceNote(out.InPlace)
	return tool.Result{Text: withNote(text, out.Note), Value: value}
}

// dryRunText is the text of a dry run: what would happen, and the diff.
func dryRunText(dp, verb, diff string) string {
	text := "Dry run: " + dp + " would be " + verb + "; nothing was written."
	if diff == "" {
		return text + "\n(no textual change)"
	}
	return text + "\n" + diff
}

// editOperation describes an edit (one replacement or several) for an
// approval prompt.
func editOperation(edits []fs.Replacement) string {
	if len(edits) > 1 {
		return fmt.Sprintf("edit the file, applying %d replacements in order", len(edits))
	}
	e := edits[0]
	which := "the one occurrence"
	if e.ReplaceAll {
		which = "every occurrence"
	}
	return fmt.Sprintf("edit the file, replacing %s of a %d-byte string with %d bytes", which, len(e.OldString), len(e.NewString))
}
