package fsbackend

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/atomicwrite"
	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/textfile"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/journal"
)

// EditText replaces req.OldString with req.NewString (or applies each of
// req.Edits in order, all or none) in the file's LF-normalized text and
// writes it back atomically, keeping its mode, its
// encoding (UTF-8, or UTF-16 with a byte-order mark) and every byte outside
// the replaced spans: untouched line endings and a leading byte-order mark
// stay as they were, replaced lines keep their endings and added lines take
// the file's dominant one (L-96..L-118, spec difference 10). A miss that
// matches once under Unicode normalization, ignored whitespace or line
// endings, or ASCII punctuation names that line in its message; with several
// edits the message starts with the failing one, "edits[i]: ". It runs
// through the Fence: req.Policy is the Fence's to read. With
// req.DryRun nothing is written. Order:
// the Fence, an empty old string, then the target's type, then the version
// guard, then the text checks, then matching (L-98, L-103). Errors: the
// Fence's refusal; CodeEditNotFound (also a request carrying both Edits
// and OldString), CodeStaleVersion (also for a missing file, guarded or not:
// L-100, L-102; a changed version with req.Content's size and content hash
// is not a change, spec difference 14), CodeNotRegularFile, CodeNotText,
// CodeAmbiguousEdit, CodePermissionDenied, CodeAborted, CodeIOError.
func (f *Backend) EditText(ctx context.Context, target fs.Target, req fs.EditRequest) (fs.EditOutcome, error) {
	const op = "edit"
	if !req.DryRun {
		if err := f.journalReady(ctx, op, target.DisplayPath); err != nil {
			return fs.EditOutcome{}, err
		}
	}
	var out fs.EditOutcome
	err := f.mutate(ctx, req.Policy, []fs.Target{target}, op, func(at []Site) error {
		if err := checkReplacements(at[0].Target.DisplayPath, req); err != nil {
			return err
		}
		return f.locked(ctx, at[0].Target.Key, op, func() (err error) {
			out, err = f.edit(ctx, at[0], req)
			return err
		})
	})
	if err != nil {
		return fs.EditOutcome{}, err
	}
	return out, nil
}

// replacements returns the edits of req in order: req.Edits, or the single
// replacement of its top-level fields.
func replacements(req fs.EditRequest) []fs.Replacement {
	if len(req.Edits) > 0 {
		return req.Edits
	}
	return []fs.Replacement{{OldString: req.OldString, NewString: req.NewString, ReplaceAll: req.ReplaceAll}}
}

// checkReplacements refuses a request with both forms, or an empty old
// string, before anything is read.
func checkReplacements(dp string, req fs.EditRequest) error {
	if len(req.Edits) > 0 && (req.OldString != "" || req.NewString != "" || req.ReplaceAll) {
		return newErr(fs.CodeEditNotFound, "edit", dp, nil, "an edit carries either edits or old_string and new_string, not both")
	}
	for i, r := range replacements(req) {
		if r.OldString == "" {
			return newErr(fs.CodeEditNotFound, "edit", dp, textfile.ErrEmptyOld, "%s%s", editPrefix(req, i), textfile.ErrEmptyOld.Error())
		}
	}
	return nil
}

// editPrefix names the i-th edit of a request with several, "" otherwise.
func editPrefix(req fs.EditRequest, i int) string {
	if len(req.Edits) == 0 {
		return ""
	}
	return fmt.Sprintf("edits[%d]: ", i)
}

// edit is EditText's read and mutation beneath the site's root; the caller
// holds the target's lock.
func (f *Backend) edit(ctx context.Context, at Site, req fs.EditRequest) (fs.EditOutcome, error) {
	const op = "edit"
	dp := at.Target.DisplayPath
	m, err := f.locate(at.Root, at.Target, op)
	if err != nil {
		return fs.EditOutcome{}, err
	}
	defer m.close()
	if m.parent == nil {
		return fs.EditOutcome{}, stale(op, dp)
	}
	locked, st, err := lockForEdit(ctx, m, dp, f.admitRead(at.Target, op))
	if err != nil {
		return fs.EditOutcome{}, err
	}
	defer locked.Close() //nolint:errcheck // closing releases the lock; nothing was written through it
	// A changed version is stale unless the size and, below, the hash of
	// the text are what the session saw (spec difference 14).
	sameVersion := req.Version == "" || version(&st) == req.Version
	if !sameVersion && (!req.Content.Known() || st.Size != req.Content.Size) {
		return fs.EditOutcome{}, stale(op, dp)
	}
	if req.MaxBytes > 0 && st.Size > req.MaxBytes {
		return fs.EditOutcome{}, newErr(fs.CodeTooLarge, op, dp, nil,
			"cannot edit %q: %d bytes exceeds the %d-byte limit", dp, st.Size, req.MaxBytes)
	}
	// The read is capped whatever size the file reports (procfs reports 0).
	limit := int64(-1)
	if req.MaxBytes > 0 {
		limit = req.MaxBytes + 1
	}
	raw, err := readAll(ctx, locked, st.Size, limit)
	if err != nil {
		return fs.EditOutcome{}, osErr(op, op, dp, err)
	}
	if req.MaxBytes > 0 && int64(len(raw)) > req.MaxBytes {
		return fs.EditOutcome{}, newErr(fs.CodeTooLarge, op, dp, nil,
			"cannot edit %q: content exceeds the %d-byte limit", dp, req.MaxBytes)
	}
	text, enc, err := textfile.Decode(raw, -1)
	if !sameVersion && (err != nil || textHash(text) != req.Content.Hash) {
		return fs.EditOutcome{}, stale(op, dp)
	}
	if err != nil {
		return fs.EditOutcome{}, newErr(fs.CodeNotText, op, dp, err, "cannot edit %q: %v", dp, err)
	}
	for _, r := range replacements(req) {
		// A replace-all is sized before it is built (each against the
		// file's text; the output is checked again below).
		if req.MaxBytes > 0 && r.ReplaceAll && editedSizeAtLeast(text, enc, r.OldString, r.NewString) > req.MaxBytes {
			return fs.EditOutcome{}, tooLargeResult(dp, req.MaxBytes)
		}
	}
	edit, err := applyAll(text, req, dp)
	if err != nil {
		return fs.EditOutcome{}, err
	}
	output, err := textfile.Encode(edit.Output, enc)
	if err != nil {
		return fs.EditOutcome{}, newErr(fs.CodeNotText, op, dp, err, "cannot edit %q: the new text has no %s form: %v", dp, enc, err)
	}
	if req.MaxBytes > 0 && int64(len(output)) > req.MaxBytes {
		return fs.EditOutcome{}, tooLargeResult(dp, req.MaxBytes)
	}
	out := fs.EditOutcome{Version: version(&st), Before: edit.Before, After: edit.After, Replacements: edit.Replacements, Note: edit.Note}
	if req.DryRun {
		if err := m.checkBeneath(); err != nil {
			return fs.EditOutcome{}, osErr(op, op, dp, err)
		}
		return out, nil
	}
	res, err := f.publishJournaled(ctx, m, op, dp, string(output), atomicwrite.Replace, at, journal.Edit, &out.Note)
	if err != nil {
		return fs.EditOutcome{}, err
	}
	out.Version, out.InPlace = version(&res.Stat), res.InPlace.String()
	return out, nil
}

// applyAll applies the request's replacements in order, each to the text the
// previous one left, and returns their combined edit: Before of the first,
// After and Output of the last, every replacement counted, every note kept.
// The first failure fails the whole edit.
func applyAll(text string, req fs.EditRequest, dp string) (textfile.Edit, error) {
	const op = "edit"
	var all textfile.Edit
	var notes []string
	for i, r := range replacements(req) {
		prefix := editPrefix(req, i)
		edit, err := textfile.ApplyEdit(text, r.OldString, r.NewString, r.ReplaceAll)
		if ambiguous, ok := errors.AsType[*textfile.AmbiguousError](err); ok {
			return all, newErr(fs.CodeAmbiguousEdit, op, dp, err,
				"%sold_string matched %d times in %q; provide a more specific old_string or set replace_all to true", prefix, ambiguous.Count, dp)
		}
		if notFound, ok := errors.AsType[*textfile.NotFoundError](err); ok {
			msg := fmt.Sprintf("%sold_string was not found in %q", prefix, dp)
			if hint := notFound.Hint(); hint != "" {
				msg += "; " + hint
			}
			return all, newErr(fs.CodeEditNotFound, op, dp, err, "%s", msg)
		}
		if err != nil {
			return all, newErr(fs.CodeEditNotFound, op, dp, err, "%sold_string was not found in %q", prefix, dp)
		}
		if i == 0 {
			all.Before = edit.Before
		}
		all.After, all.Output, all.Style, all.HasBOM = edit.After, edit.Output, edit.Style, edit.HasBOM
		all.Replacements += edit.Replacements
		if edit.Note != "" {
			notes = append(notes, edit.Note)
		}
		text = edit.Output
	}
	all.Note = strings.Join(notes, " ")
	return all, nil
}

// editedSizeAtLeast is a lower bound, computed without building it, on the
// size in bytes of what an edit replacing every occurrence of oldString with
// newString in text (decoded from enc) writes back. textfile.ApplyEdit keeps
// every byte outside the replaced spans and writes at least newString's
// LF-normalized bytes for each of the n spans, each at least oldString's
// LF-normalized bytes of text. Encoded as UTF-16, a text takes at least two
// thirds of its UTF-8 bytes. Matching is textfile.ApplyEdit's:
// non-overlapping, on LF-normalized text.
func editedSizeAtLeast(text string, enc textfile.Encoding, oldString, newString string) int64 {
	oldNorm, newNorm := textfile.NormalizeLF(oldString), textfile.NormalizeLF(newString)
	if oldNorm == "" {
		return 0
	}
	_, rest := textfile.SplitBOM(text)
	before := textfile.NormalizeLF(rest)
	n := int64(strings.Count(before, oldNorm))
	size := int64(len(before)) + n*(int64(len(newNorm))-int64(len(oldNorm)))
	if enc != textfile.UTF8 {
		size = size / 3 * 2
	}
	return size
}

// tooLargeResult is the refusal of an edit whose result would pass the
// write limit; nothing is written.
func tooLargeResult(dp string, limit int64) error {
	return newErr(fs.CodeTooLarge, "edit", dp, nil,
		"cannot edit %q: the edited content would exceed the %d-byte limit", dp, limit)
}

// lockForEdit locks the target across processes (see guard) and returns
// the locked descriptor, open for reading, with its fstat. A missing file is
// stale (L-100); anything but a regular file is refused before the version
// is compared (L-103), and so is a file admit refuses (before it is locked
// or read). Closing the returned file releases the lock.
func lockForEdit(ctx context.Context, m *mutation, dp string, admit func(*dirfd.File, *unix.Stat_t) error) (*dirfd.File, unix.Stat_t, error) {
	const op = "edit"
	file, st, err := guard(ctx, m, admit)
	if errors.Is(err, errGone) {
		return nil, st, stale(op, dp)
	}
	if err != nil {
		return nil, st, osErr(op, op, dp, err)
	}
	if !dirfd.IsRegular(&st) {
		_ = file.Close()
		return nil, st, notRegular(op, op, dp)
	}
	if consumes(file, &st, m.name) {
		_ = file.Close()
		return nil, st, consumingStream(op, op, dp)
	}
	return file, st, nil
}

// textHash is the content hash of a whole text (see textfile.TextHash).
func textHash(text string) fs.ContentHash {
	h := textfile.NewTextHash()
	h.Write(text)
	return fs.ContentHash(h.Sum())
}
