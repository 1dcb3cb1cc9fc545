package toolfs

import (
	"context"
	"path/filepath"
	"strconv"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// MkdirValue is the structured result of mkdir.
type MkdirValue struct {
	Path    string `json:"path" jsonschema:"the display path of the directory"`
	Created int    `json:"created" jsonschema:"how many directories were created (0: it already existed)"`
}

// DeleteValue is the structured result of delete.
type DeleteValue struct {
	Path        string `json:"path" jsonschema:"the display path of what was deleted"`
	Type        string `json:"type" jsonschema:"file, directory, symlink or other"`
	Files       int    `json:"files" jsonschema:"regular files deleted beneath a directory"`
	Directories int    `json:"directories" jsonschema:"directories deleted, the target included"`
	Others      int    `json:"others" jsonschema:"symlinks and special files deleted beneath a directory"`
}

// MoveValue is the structured result of move.
type MoveValue struct {
	Source      string `json:"source" jsonschema:"the display path moved from"`
	Destination string `json:"destination" jsonschema:"the display path moved to"`
	Type        string `json:"type" jsonschema:"file, directory, symlink or other"`
	Replaced    bool   `json:"replaced" jsonschema:"true when an entry at the destination was replaced (overwrite)"`
	Copied      bool   `json:"copied" jsonschema:"true when the file was copied between filesystems and the source removed"`
}

// Mkdir returns the mkdir tool: create a directory, with its missing
// parents unless parents is false. It runs exclusively, holding the
// session's turn on the target (serial).
func (t *Tools) Mkdir() *tool.Tool {
	props := []prop{
		{name: "path", schema: str("Directory to create, resolved by the filesystem backend."), required: true},
		{name: "parents", schema: boolean("Create missing parent directories too, and accept an existing directory. Defaults to true.")},
	}
	return t.g.Tool(tool.Tool{
		Name:         "mkdir",
		Description:  "Create a directory, and its missing parents.",
		InputSchema:  object(props...),
		OutputSchema: outputSchema[MkdirValue](),
		Annotations:  tool.Annotations{Idempotent: true},
	}, true, t.mkdir)
}

func (t *Tools) mkdir(ctx context.Context, call *guard.Call) tool.Result {
	a := args(call.Args)
	path, err := a.path("path")
	if err != nil {
		return t.g.Fail(err, nil)
	}
	parents, err := a.optBool("parents", true)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	op := "make the directory (its parent must exist; an existing one is refused)"
	if parents {
		op = "make the directory and any missing parents"
	}
	policy, targets, err := t.mutationTargets(ctx, call, op, path)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	target := targets[0]
	done, err := t.serial.acquire(ctx, "mkdir", call.Session.Owner(), target)
	if err != nil {
		return t.g.Fail(err, policy)
	}
	defer done()
	out, err := t.deps.FS.Mkdir(ctx, target, fs.MkdirOptions{Parents: parents, Policy: policy})
	if err != nil {
		return t.g.Fail(err, policy)
	}
	dp := target.DisplayPath
	text := "Created directory " + dp
	switch {
	case out.Created == 0:
		text = "Directory " + dp + " already exists"
	case out.Created > 1:
		text += " (" + strconv.Itoa(out.Created) + " directories created)"
	}
	return tool.Result{Text: text, Value: MkdirValue{Path: dp, Created: out.Created}}
}

// Delete returns the delete tool: delete a file, a symlink (never what it
// points to) or, with recursive, a directory and everything in it. It runs
// exclusively, holding the session's turn on the target (serial): on a
// directory, the directory's own turn.
func (t *Tools) Delete() *tool.Tool {
	props := []prop{
		{name: "path", schema: str("File, symlink or directory to delete, resolved by the filesystem backend. A symlink is deleted itself."), required: true},
		{name: "recursive", schema: boolean("Delete a directory and everything in it. Defaults to false: only an empty directory is deleted.")},
	}
	return t.g.Tool(tool.Tool{
		Name:         "delete",
		Description:  "Delete a file, a symlink, or a directory (recursive for a non-empty one).",
		InputSchema:  object(props...),
		OutputSchema: outputSchema[DeleteValue](),
		Annotations:  tool.Annotations{Destructive: true, Idempotent: true},
	}, true, t.delete)
}

func (t *Tools) delete(ctx context.Context, call *guard.Call) tool.Result {
	a := args(call.Args)
	path, err := a.path("path")
	if err != nil {
		return t.g.Fail(err, nil)
	}
	recursive, err := a.optBool("recursive", false)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	op := "delete the entry (a file, a symlink, or an empty directory)"
	if recursive {
		op = "delete the entry and, for a directory, everything in it (recursive)"
	}
	policy, targets, err := t.mutationTargets(ctx, call, op, path)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	target := targets[0]
	if err := t.refuseRoot(ctx, call.Session, policy, target, "delete"); err != nil {
		return t.g.Fail(err, policy)
	}
	done, err := t.serial.acquire(ctx, "delete", call.Session.Owner(), target)
	if err != nil {
		return t.g.Fail(err, policy)
	}
	defer done()
	opts := fs.RemoveOptions{Recursive: recursive, Policy: policy, Version: t.guard(ctx, call.Session, target)}
	out, err := t.deps.FS.Remove(ctx, target, opts)
	if err != nil {
		return t.g.Fail(err, policy)
	}
	if out.Type != fs.TypeSymlink {
		// A deleted symlink says nothing of the file it pointed to.
		if err := t.observe(call.Session, target, fs.Observation{Kind: fs.Absent}); err != nil {
			return t.g.Fail(err, policy)
		}
	}
	dp := target.DisplayPath
	text := "Deleted " + string(out.Type) + " " + dp
	if out.Type == fs.TypeDirectory {
		text += " (" + strconv.Itoa(out.Files) + " files, " + strconv.Itoa(out.Directories) + " directories, " + strconv.Itoa(out.Others) + " others)"
	}
	text = withNote(text, out.Note)
	return tool.Result{Text: text, Value: DeleteValue{
		Path: dp, Type: string(out.Type), Files: out.Files, Directories: out.Directories, Others: out.Others,
	}}
}

// Move returns the move tool: rename a file, symlink or directory, across
// directories, never replacing unless overwrite. It runs exclusively,
// holding the session's turns on both source and destination (serial).
func (t *Tools) Move() *tool.Tool {
	props := []prop{
		{name: "source", schema: str("File, symlink or directory to move, resolved by the filesystem backend. A symlink is moved itself."), required: true},
		{name: "destination", schema: str("Its new path, including the new name."), required: true},
		{name: "overwrite", schema: boolean("Replace an entry at the destination. Defaults to false.")},
	}
	return t.g.Tool(tool.Tool{
		Name:         "move",
		Description:  "Move or rename a file, a symlink or a directory.",
		InputSchema:  object(props...),
		OutputSchema: outputSchema[MoveValue](),
		Annotations:  tool.Annotations{Destructive: true},
	}, true, t.move)
}

func (t *Tools) move(ctx context.Context, call *guard.Call) tool.Result {
	a := args(call.Args)
	from, err := a.path("source")
	if err != nil {
		return t.g.Fail(err, nil)
	}
	to, err := a.path("destination")
	if err != nil {
		return t.g.Fail(err, nil)
	}
	overwrite, err := a.optBool("overwrite", false)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	op := "move the entry to the destination (an entry there is refused)"
	if overwrite {
		op = "move the entry to the destination, replacing what is there (overwrite)"
	}
	policy, targets, err := t.mutationTargets(ctx, call, op, from, to)
	if err != nil {
		return t.g.Fail(err, nil)
	}
	source, dest := targets[0], targets[1]
	for _, tg := range targets {
		if err := t.refuseRoot(ctx, call.Session, policy, tg, "move"); err != nil {
			return t.g.Fail(err, policy)
		}
	}
	done, err := t.serial.acquireAll(ctx, "move", call.Session.Owner(), source, dest)
	if err != nil {
		return t.g.Fail(err, policy)
	}
	defer done()
	opts := fs.MoveOptions{Overwrite: overwrite, Policy: policy, Version: t.guard(ctx, call.Session, source)}
	out, err := t.deps.FS.Move(ctx, source, dest, opts)
	if err != nil {
		return t.g.Fail(err, policy)
	}
	if out.Type != fs.TypeSymlink {
		// The records of what the session read follow the entry.
		obs := fs.Observation{Kind: fs.Moved, From: source.Key, Prior: out.Prior, Version: out.Version}
		if err := t.observe(call.Session, dest, obs); err != nil {
			return t.g.Fail(err, policy)
		}
	}
	text := "Moved " + string(out.Type) + " " + source.DisplayPath + " to " + dest.DisplayPath
	switch {
	case out.Copied:
		text += " (copied between filesystems, the source removed)"
	case out.Replaced:
		text += " (replacing what was there)"
	}
	text = withNote(text, out.Note)
	return tool.Result{Text: text, Value: MoveValue{
		Source: source.DisplayPath, Destination: dest.DisplayPath, Type: string(out.Type), Replaced: out.Replaced, Copied: out.Copied,
	}}
}

// guard returns the version the session last saw of target when it has
// one, so a delete or move of a file that changed since is refused; ""
// (no guard) otherwise.
func (t *Tools) guard(ctx context.Context, sess *session.Session, target fs.Target) fs.Version {
	if t.deps.Intents == nil {
		return ""
	}
	intent, err := t.deps.Intents.WriteIntent(ctx, sess.Owner(), target)
	if err != nil || intent.Kind != fs.ReplaceIfVersion {
		return ""
	}
	return intent.Version
}

// refuseRoot refuses to delete or move a writable root, the session's
// working directory, or a directory that holds one, whatever the mode: the
// entry named by the display path (its canonical parent joined with its
// name, a final symlink not followed) is compared with each.
func (t *Tools) refuseRoot(ctx context.Context, sess *session.Session, policy *sandbox.ExecutionPolicy, target fs.Target, verb string) error {
	dp := target.DisplayPath
	parent, err := t.deps.FS.Resolve(ctx, filepath.Dir(dp), fs.ResolveOptions{})
	if err != nil {
		return err
	}
	entry := filepath.Join(string(parent.Key), filepath.Base(dp))
	var roots []string
	if policy != nil {
		// Every root the policy may grant, whatever its mode: the
		// workspace roots, the temp areas and the extra writable roots
		// (issue 21: deleting a --writable-root is refused as deleting a
		// temp root is, in every mode).
		roots = policy.Roots()
	}
	if cwd := t.cwd(sess, policy, ""); cwd != "" {
		roots = append(roots, filepath.Clean(cwd))
	}
	for _, r := range roots {
		switch {
		case r == entry:
			return &fs.Error{
				Code: fs.CodePermissionDenied, Op: verb, Path: dp,
				Message: "cannot " + verb + " " + strconv.Quote(dp) + ": it is a writable root or the working directory",
			}
		case dirfd.Beneath(entry, r):
			return &fs.Error{
				Code: fs.CodePermissionDenied, Op: verb, Path: dp,
				Message: "cannot " + verb + " " + strconv.Quote(dp) + ": it holds the writable root or working directory " + strconv.Quote(r),
			}
		}
	}
	return nil
}

// mutationTargets is mutationTarget for a call with several paths: each is
// resolved under the standing policy, and an escalating call asks once,
// naming every target.
func (t *Tools) mutationTargets(ctx context.Context, call *guard.Call, op string, paths ...string) (*sandbox.ExecutionPolicy, []fs.Target, error) {
	esc, err := call.Escalation()
	if err != nil {
		return nil, nil, err
	}
	standing := call.Standing()
	targets := make([]fs.Target, 0, len(paths))
	for _, p := range paths {
		target, err := t.resolve(ctx, call.Session, standing, p)
		if err != nil {
			return nil, nil, err
		}
		targets = append(targets, target)
	}
	if !t.confines {
		return nil, targets, nil
	}
	// The workspace root, and so the targets, do not change with the mode.
	policy, err := t.escalate(ctx, call, op, paths, esc, standing, targets)
	if err != nil {
		return nil, nil, err
	}
	return policy, targets, nil
}
