package fsbackend

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/atomicwrite"
	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/textfile"
	"github.com/dsh-go/harness/services/fs"
)

// EditText replaces req.OldString with req.NewString in the file's
// LF-normalized text and writes it back atomically, keeping its mode, its
// encoding (UTF-8, or UTF-16 with a byte-order mark) and every byte outside
// the replaced spans: untouched line endings and a leading byte-order mark
// stay as they were, replaced lines keep their endings and added lines take
// the file's dominant one (L-96..L-118, spec difference 10). A miss that
// matches once under Unicode normalization, ignored whitespace or line
// endings, or ASCII punctuation names that line in its message. It runs
// where the Mounter mounts it: req.Policy is the Mounter's to read. Order:
// the Mounter, an empty old string, then the target's type, then the version
// guard, then the text checks, then matching (L-98, L-103). Errors: the
// Mounter's refusal; CodeEditNotFound, CodeStaleVersion (also for a missing
// file, guarded or not: L-100, L-102), CodeNotRegularFile, CodeNotText,
// CodeAmbiguousEdit, CodePermissionDenied, CodeAborted, CodeIOError.
func (f *Backend) EditText(ctx context.Context, target fs.Target, req fs.EditRequest) (fs.EditOutcome, error) {
	const op = "edit"
	mount, err := f.mounter.Mount(ctx, target, req.Policy)
	if err != nil {
		return fs.EditOutcome{}, err
	}
	var out fs.EditOutcome
	err = checkCtx(ctx, op)
	if err == nil && req.OldString == "" {
		err = newErr(fs.CodeEditNotFound, op, mount.Target.DisplayPath, textfile.ErrEmptyOld, "%s", textfile.ErrEmptyOld.Error())
	}
	if err == nil {
		err = f.lockAndRun(ctx, mount, op, func() (err error) {
			out, err = f.edit(ctx, mount, req)
			return err
		})
	}
	if err := mount.done(err); err != nil {
		return fs.EditOutcome{}, err
	}
	return out, nil
}

// edit is EditText's read and mutation beneath the mount's root; the caller
// holds the target's lock.
func (f *Backend) edit(ctx context.Context, mount Mount, req fs.EditRequest) (_ fs.EditOutcome, err error) {
	const op = "edit"
	dp := mount.Target.DisplayPath
	m, err := f.locate(mount.Root, mount.Target, op)
	if err != nil {
		return fs.EditOutcome{}, mount.refused(err, nil)
	}
	defer func() {
		err = mount.refused(err, m)
		m.close()
	}()
	if m.parent == nil {
		return fs.EditOutcome{}, stale(op, dp)
	}
	locked, st, err := lockForEdit(ctx, m, dp)
	if err != nil {
		return fs.EditOutcome{}, err
	}
	defer locked.Close() //nolint:errcheck // closing releases the lock; nothing was written through it
	if req.Version != "" && version(&st) != req.Version {
		return fs.EditOutcome{}, stale(op, dp)
	}
	if req.MaxBytes > 0 && st.Size > req.MaxBytes {
		return fs.EditOutcome{}, newErr(fs.CodeTooLarge, op, dp, nil,
			"cannot edit %q: %d bytes exceeds the %d-byte limit", dp, st.Size, req.MaxBytes)
	}
	raw, err := readAll(ctx, locked, st.Size, -1)
	if err != nil {
		return fs.EditOutcome{}, osErr(op, op, dp, err)
	}
	text, enc, err := textfile.Decode(raw, -1)
	if err != nil {
		return fs.EditOutcome{}, newErr(fs.CodeNotText, op, dp, err, "cannot edit %q: %v", dp, err)
	}
	edit, err := textfile.ApplyEdit(text, req.OldString, req.NewString, req.ReplaceAll)
	if ambiguous, ok := errors.AsType[*textfile.AmbiguousError](err); ok {
		return fs.EditOutcome{}, newErr(fs.CodeAmbiguousEdit, op, dp, err,
			"old_string matched %d times in %q; provide a more specific old_string or set replace_all to true", ambiguous.Count, dp)
	}
	if notFound, ok := errors.AsType[*textfile.NotFoundError](err); ok {
		msg := fmt.Sprintf("old_string was not found in %q", dp)
		if hint := notFound.Hint(); hint != "" {
			msg += "; " + hint
		}
		return fs.EditOutcome{}, newErr(fs.CodeEditNotFound, op, dp, err, "%s", msg)
	}
	if err != nil {
		return fs.EditOutcome{}, newErr(fs.CodeEditNotFound, op, dp, err, "old_string was not found in %q", dp)
	}
	output, err := textfile.Encode(edit.Output, enc)
	if err != nil {
		return fs.EditOutcome{}, newErr(fs.CodeNotText, op, dp, err, "cannot edit %q: the new text has no %s form: %v", dp, enc, err)
	}
	res, err := f.publish(ctx, m, op, dp, string(output), atomicwrite.Replace, mount)
	if err != nil {
		return fs.EditOutcome{}, err
	}
	return fs.EditOutcome{
		Version: version(&res.Stat), Before: edit.Before, After: edit.After, Replacements: edit.Replacements, Note: edit.Note,
		InPlace: res.InPlace.String(),
	}, nil
}

// lockForEdit locks the target across processes (see guard) and returns
// the locked descriptor, open for reading, with its fstat. A missing file is
// stale (L-100); anything but a regular file is refused before the version
// is compared (L-103). Closing the returned file releases the lock.
func lockForEdit(ctx context.Context, m *mutation, dp string) (*os.File, unix.Stat_t, error) {
	const op = "edit"
	file, st, err := guard(ctx, m)
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
	return file, st, nil
}
