package fsbackend

import (
	"context"
	"errors"
	"io"
	"os"
	"path"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/atomicwrite"
	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/textfile"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/journal"
)

// WriteText creates or replaces the file at target.Key with content,
// atomically and durably, under opts.Intent (A-10, L-53..L-88), where the
// Fence runs it: opts.Policy is the Fence's to read. Over an existing
// text file the file's conventions survive (spec difference 10, superseding
// Z-4): content without a byte-order mark gets the file's back, content
// without "\r" takes the file's dominant line ending, and a UTF-16 file
// stays UTF-16; the outcome's Note names any other change of the file's
// bytes beyond its text. A new file, or one that is not text, gets content
// exactly as given. Errors: the Fence's refusal; CodeNotRegularFile (a
// directory or other entry at the target, also one appearing before a
// guarded create publishes), CodeNotObserved (CreateIfAbsent and something
// exists), CodeStaleVersion (ReplaceIfVersion and the file changed or is
// gone; a changed version with the intent's known size and content hash is
// not a change, spec difference 14), CodeNotFound (a parent segment is not a directory), CodeNotText
// (content that is not valid UTF-8 over a UTF-16 file),
// CodePermissionDenied, CodeAborted, CodeIOError. With opts.DryRun the
// same checks run and nothing is written.
func (f *Backend) WriteText(ctx context.Context, target fs.Target, content string, opts fs.WriteOptions) (fs.WriteOutcome, error) {
	const op = "write"
	if !opts.DryRun {
		if err := f.journalReady(ctx, op, target.DisplayPath); err != nil {
			return fs.WriteOutcome{}, err
		}
	}
	var out fs.WriteOutcome
	err := f.mutate(ctx, opts.Policy, []fs.Target{target}, op, func(at []Site) error {
		return f.locked(ctx, at[0].Target.Key, op, func() (err error) {
			out, err = f.write(ctx, at[0], content, opts.Intent, opts.DryRun)
			return err
		})
	})
	if err != nil {
		return fs.WriteOutcome{}, err
	}
	return out, nil
}

// locked takes the lock of key and runs mutate while holding it.
func (f *Backend) locked(ctx context.Context, key fs.TargetKey, op string, mutate func() error) error {
	unlock, err := f.locks.lock(ctx, key)
	if err != nil {
		return aborted(op, err)
	}
	defer unlock()
	return mutate()
}

// write is WriteText's mutation beneath the site's root; the caller holds
// the target's lock.
func (f *Backend) write(ctx context.Context, at Site, content string, intent fs.WriteIntent, dryRun bool) (_ fs.WriteOutcome, err error) {
	const op = "write"
	dp := at.Target.DisplayPath
	m, err := f.locate(at.Root, at.Target, op)
	if err != nil {
		return fs.WriteOutcome{}, err
	}
	defer m.close()
	if m.present && !dirfd.IsRegular(&m.st) {
		return fs.WriteOutcome{}, notRegular(op, op, dp)
	}
	// held is the target opened and locked by the guard, read again for
	// the prior content rather than opened a second time.
	var held *dirfd.File
	switch intent.Kind {
	case fs.CreateIfAbsent:
		if m.present {
			return fs.WriteOutcome{}, notObserved(dp, nil)
		}
	case fs.ReplaceIfVersion:
		gone := newErr(fs.CodeStaleVersion, op, dp, nil, "cannot write %q: file no longer exists", dp)
		if !m.present {
			return fs.WriteOutcome{}, gone
		}
		// Compare and publish under the cross-process guard, so two
		// processes replacing one version cannot both win.
		locked, st, err := guard(ctx, m, f.admitRead(at.Target, op))
		if errors.Is(err, errGone) {
			return fs.WriteOutcome{}, gone
		}
		if err != nil {
			return fs.WriteOutcome{}, osErr(op, op, dp, err)
		}
		defer locked.Close() //nolint:errcheck // closing releases the lock; nothing was written through it
		held = locked
		if !dirfd.IsRegular(&st) {
			return fs.WriteOutcome{}, notRegular(op, op, dp)
		}
		m.st = st
		ok, err := fresh(ctx, locked, &st, intent.Version, intent.Content)
		if err != nil {
			return fs.WriteOutcome{}, osErr(op, op, dp, err)
		}
		if !ok {
			return fs.WriteOutcome{}, stale(op, dp)
		}
	}
	var prior priorFile
	if m.present {
		limit := f.cfg.DiffBasisMaxBytes
		if prior, err = scanPrior(ctx, m.parent, m.name, held, m.st, limit, int64(len(content)) < limit, f.admitRead(at.Target, op)); err != nil {
			return fs.WriteOutcome{}, osErr(op, op, dp, err)
		}
	}
	disk, note, err := conform(content, prior.conv, dp)
	if err != nil {
		return fs.WriteOutcome{}, err
	}
	pub := atomicwrite.Replace
	if intent.Kind == fs.CreateIfAbsent {
		pub = atomicwrite.CreateOnly
	}
	if dryRun {
		if err := m.checkBeneath(); err != nil {
			return fs.WriteOutcome{}, osErr(op, op, dp, err)
		}
		out := fs.WriteOutcome{Operation: fs.OpCreate, Before: prior.basis, After: displayText(content), Note: note}
		if m.present {
			out.Operation, out.Version = fs.OpUpdate, version(&m.st)
		}
		return out, nil
	}
	res, err := f.publishJournaled(ctx, m, op, dp, disk, pub, at, journal.Write, &note)
	if err != nil {
		return fs.WriteOutcome{}, err
	}
	out := fs.WriteOutcome{
		Operation: fs.OpCreate, Version: version(&res.Stat), Before: prior.basis, After: displayText(content), Note: note,
		InPlace: res.InPlace.String(),
	}
	if m.present {
		out.Operation = fs.OpUpdate
	}
	return out, nil
}

// publishJournaled is publish of a write or an edit (kind) with the
// target's prior state journaled first (Settings.Journal): captured on the
// open parent under the target's lock, durable before the publication,
// its outcome recorded after. note is note with, when the prior content
// was too large to keep, the sentence saying the change cannot be undone.
func (f *Backend) publishJournaled(ctx context.Context, m *mutation, op, dp, content string, pub atomicwrite.Publication, at Site, kind journal.Kind, note *string) (atomicwrite.Result, error) {
	key := string(at.Target.Key)
	ch, err := f.beginChange(ctx, kind, op, dp, key)
	if err != nil {
		return atomicwrite.Result{}, err
	}
	if m.parent != nil {
		if _, err := ch.capture(m.parent, m.name, key, true); err != nil {
			return atomicwrite.Result{}, err
		}
	}
	hash := ""
	if ch != nil {
		hash = contentKey(content)
	}
	// The journal's sync starts with the temp file's fsync, so both reach
	// the disk together; the publication waits for it.
	synced, err := ch.stage(journal.Node{Path: key, Type: journal.File, Size: int64(len(content)), Hash: hash})
	if err != nil {
		return atomicwrite.Result{}, err
	}
	res, err := f.publish(ctx, m, op, dp, content, pub, at, synced)
	// A publication that failed before it waited still waits: a pending
	// sync holds its segment open and undropped until it is waited for.
	_ = synced.wait()
	ch.finish(err == nil, node(key, &res.Stat, hash))
	if s := ch.notKept(); s != "" {
		*note = strings.TrimSpace(*note + " " + s)
	}
	return res, err
}

// mutation is a located target: its open parent (nil when the parent does
// not exist yet), its name, and the probe of what is there now.
type mutation struct {
	root    *dirfd.Dir
	rel     string // parent path beneath root
	parent  *dirfd.Parent
	name    string
	present bool
	st      unix.Stat_t
}

func (m *mutation) close() {
	if m.parent != nil {
		_ = m.parent.Close()
	}
}

// checkBeneath checks, for a dry run that publishes nothing, what a
// publication would check: that the directory it would write in (the
// parent, or the root when the parent is still missing) is beneath the
// site's root now, so a dry run is refused where the mutation would be.
func (m *mutation) checkBeneath() error {
	if m.parent != nil {
		return m.parent.CheckBeneath()
	}
	root, _, err := m.root.OpenParent("", false)
	if err != nil {
		return err
	}
	defer root.Close() //nolint:errcheck // directory descriptor
	return root.CheckBeneath()
}

// locate opens the target's parent beneath root (if it exists) and probes
// the target, following a final symlink as stat does: a dangling link probes
// absent (L-58).
func (f *Backend) locate(root *dirfd.Dir, target fs.Target, op string) (*mutation, error) {
	dp := target.DisplayPath
	rel, ok := root.Rel(string(target.Key))
	if !ok {
		// Fail closed: a target outside the handle is never mutated.
		return nil, osErr(op, op, dp, &os.PathError{Op: op, Path: string(target.Key), Err: unix.EXDEV})
	}
	if rel == "" {
		// The handle's own directory (S-14), or "/" itself.
		return nil, notRegular(op, op, dp)
	}
	dir, name := path.Split(rel)
	m := &mutation{root: root, rel: path.Clean(dir + "."), name: name}
	parent, _, err := root.OpenParent(m.rel, false)
	switch {
	case err == nil:
		m.parent = parent
	case errors.Is(err, unix.ENOENT):
		return m, nil
	default:
		return nil, osErr(op, op, dp, err)
	}
	m.st, err = parent.Stat(name, true)
	switch {
	case err == nil:
		m.present = true
	case isAbsent(err):
		// Absent, or a dangling link: publication meets whatever entry is
		// there (L-58, Z-2).
	default:
		m.close()
		return nil, osErr(op, op, dp, err)
	}
	return m, nil
}

// publish creates missing parents, then publishes content at the target
// (spec differences 9, 15, 18: see atomicwrite) through the fence's Change,
// which decides the entry first and checks the publication after; ready
// is the journal's sync, started with the temp file's fsync and waited for
// right before the publication (atomicwrite.Request.BeforeSync and
// BeforePublish). A refusal removes the parents it made.
func (f *Backend) publish(ctx context.Context, m *mutation, op, dp, content string, pub atomicwrite.Publication, at Site, ready staged) (atomicwrite.Result, error) {
	if err := checkNames(m.rel, m.name); err != nil {
		return atomicwrite.Result{}, osErr(op, op, dp, err)
	}
	created := 0
	if m.parent == nil {
		parent, n, err := m.root.OpenParent(m.rel, true)
		if err == nil && n > 0 && f.cfg.NewOwner != nil {
			err = m.root.ChownCreated(m.rel, n, f.cfg.NewOwner.UID, f.cfg.NewOwner.GID)
		}
		if err != nil {
			if parent != nil {
				_ = parent.Close()
			}
			f.undoParents(m, n)
			return atomicwrite.Result{}, osErr(op, op, dp, err)
		}
		m.parent, created = parent, n
	}
	var res atomicwrite.Result
	ran := false
	err := f.fence.Change(at, m.parent, m.name, func(verify func() error) (err error) {
		ran = true
		res, err = f.publishIn(ctx, m, op, dp, content, pub, at.Domain, verify, ready, created)
		return err
	})
	if err != nil && !ran {
		f.undoParents(m, created)
		return atomicwrite.Result{}, osErr(op, op, dp, err)
	}
	return res, err
}

// publishIn publishes content at the target in its open parent, with verify
// (the fence's check) right after the publication; confined says it runs
// under a Landlock domain. A failure removes the created parents it made.
func (f *Backend) publishIn(ctx context.Context, m *mutation, op, dp, content string, pub atomicwrite.Publication, confined bool, verify func() error, ready staged, created int) (atomicwrite.Result, error) {
	f.reclaimOnce(m.parent)
	res, err := atomicwrite.Write(ctx, atomicwrite.Request{
		Parent:        m.parent,
		Name:          m.name,
		Content:       content,
		Publication:   pub,
		Durability:    f.cfg.Durability,
		Owner:         f.cfg.NewOwner,
		Syncs:         &f.syncs,
		Confined:      confined,
		Verify:        verify,
		AfterStage:    f.afterStage,
		BeforeSync:    ready.start,
		BeforePublish: ready.wait,
	})
	if res.Residue != nil {
		f.log.Warn("staging cleanup failed after publication", zap.Error(res.Residue))
	}
	if err != nil {
		// A failed write leaves no directory it made behind.
		f.undoParents(m, created)
	}
	if collision, ok := errors.AsType[*atomicwrite.CollisionError](err); ok {
		if collision.Regular {
			return res, notObserved(dp, err)
		}
		return res, newErr(fs.CodeNotRegularFile, op, dp, err, "cannot write %q: not a regular file", dp)
	}
	if denied, ok := errors.AsType[*atomicwrite.DeniedError](err); ok {
		if denied.Dir != "" {
			return res, newErr(fs.CodePermissionDenied, op, dp, err,
				"cannot write %q: permission denied: the directory %q does not allow this process to create or replace files in it", dp, denied.Dir)
		}
		return res, newErr(fs.CodePermissionDenied, op, dp, err, "cannot write %q: permission denied: %s", dp, denied.Reason)
	}
	if err != nil {
		return res, osErr(op, op, dp, err)
	}
	if res.InPlace != atomicwrite.NotInPlace {
		f.log.Info("rewrote a file in place, not atomically", zap.String("path", dp), zap.Stringer("reason", res.InPlace))
	}
	return res, nil
}

// priorFile is what a write learns of the file it replaces: its conventions
// when it is text (nil otherwise), and its text for the diff.
type priorFile struct {
	conv  *textfile.Conventions
	basis *string
}

// scanPrior streams the file name once (through held, at st, read from its
// start, when the caller has it open already). Its conventions (encoding,
// byte-order mark, line endings over the whole file) are returned when it is
// a regular text file by the rules of a read. When wantBasis, its text,
// LF-normalized and without a byte-order mark, is returned as the diff basis
// if the file has no NUL at all and its size, measured on the opened
// descriptor, is below limit and did not change while reading (L-89..L-95).
// Any other case is empty without error; only an ended context and admit's
// refusal of the file it opened (before anything is read: the write is then
// refused) are errors. A held file was admitted when it was opened.
func scanPrior(ctx context.Context, parent *dirfd.Parent, name string, held *dirfd.File, st unix.Stat_t, limit int64, wantBasis bool, admit func(*dirfd.File, *unix.Stat_t) error) (priorFile, error) {
	file := held
	if held == nil {
		opened, ost, err := parent.OpenRead(name)
		if err != nil {
			return priorFile{}, nil //nolint:nilerr // best effort: nothing known
		}
		defer opened.Close() //nolint:errcheck // read-only descriptor
		if err := admit(opened, &ost); err != nil {
			return priorFile{}, err
		}
		file, st = opened, ost
	}
	if !dirfd.IsRegular(&st) || consumes(file, &st, name) {
		return priorFile{}, nil
	}
	wantBasis = wantBasis && st.Size < limit
	var (
		dec     textfile.Decoder
		conv    textfile.Conventions
		text    strings.Builder
		started bool
		total   int64
	)
	if wantBasis {
		text.Grow(int(st.Size))
	}
	buf := make([]byte, readChunkBytes)
	for {
		if err := ctx.Err(); err != nil {
			return priorFile{}, err
		}
		n, rerr := file.ReadAt(buf, total)
		total += int64(n)
		chunk, err := dec.Feed(buf[:n])
		if err == nil && errors.Is(rerr, io.EOF) {
			err = dec.Close()
		}
		if err != nil || (rerr != nil && !errors.Is(rerr, io.EOF)) {
			return priorFile{}, nil //nolint:nilerr // not text, or unreadable: nothing known
		}
		if !started && chunk != "" {
			started = true
			conv.BOM, chunk = textfile.SplitBOM(chunk)
		}
		conv.Endings.Add(chunk)
		if wantBasis = wantBasis && total < limit; wantBasis {
			text.WriteString(chunk)
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
	}
	conv.Encoding = dec.Encoding()
	prior := priorFile{conv: &conv}
	if wantBasis && total == st.Size && !strings.Contains(text.String(), "\x00") {
		basis := textfile.NormalizeLF(text.String())
		prior.basis = &basis
	}
	return prior, nil
}

// conform returns the bytes to store for content, given the conventions of
// the file it replaces (nil for a new file or one that is not text), and the
// note on what changed beyond the text (see textfile.ConformWrite).
func conform(content string, conv *textfile.Conventions, dp string) (string, string, error) {
	if conv == nil {
		return content, "", nil
	}
	w := textfile.ConformWrite(content, *conv)
	b, err := textfile.Encode(w.Output, conv.Encoding)
	if err != nil {
		return "", "", newErr(fs.CodeNotText, "write", dp, err, "cannot write %q: the content has no %s form: %v", dp, conv.Encoding, err)
	}
	return string(b), w.Note, nil
}

// displayText is the text shown in outcomes: without a leading byte-order
// mark, LF-normalized.
func displayText(s string) string {
	_, rest := textfile.SplitBOM(s)
	return textfile.NormalizeLF(rest)
}

func notObserved(dp string, cause error) *fs.Error {
	return newErr(fs.CodeNotObserved, "write", dp, cause, "cannot overwrite existing %q without reading it first", dp)
}

func stale(op, dp string) *fs.Error {
	return newErr(fs.CodeStaleVersion, op, dp, nil, "cannot %s %q: file changed since it was read", op, dp)
}

// undoParents removes the n parent directories a failed write created.
func (f *Backend) undoParents(m *mutation, n int) {
	if n == 0 {
		return
	}
	if err := m.root.RemoveCreated(m.rel, n); err != nil {
		f.log.Warn("could not remove directories created by a failed write", zap.Error(err))
	}
}

// Limits of Linux path resolution, checked before anything is created so a
// name the kernel would refuse fails without leaving parents behind.
const (
	nameMax = 255  // NAME_MAX: bytes in one component
	pathMax = 4096 // PATH_MAX: bytes in a path, terminating NUL included
)

// checkNames refuses a parent path or name the kernel would refuse as too
// long (ENAMETOOLONG).
func checkNames(rel, name string) error {
	if len(rel)+1+len(name) >= pathMax {
		return &os.PathError{Op: "write", Path: rel + "/" + name, Err: unix.ENAMETOOLONG}
	}
	for part := range strings.SplitSeq(rel+"/"+name, "/") {
		if len(part) > nameMax {
			return &os.PathError{Op: "write", Path: part, Err: unix.ENAMETOOLONG}
		}
	}
	return nil
}

// reclaimOnce removes, the first time this process writes into a directory,
// the staging directories that killed writers left there (see
// atomicwrite.Reclaim). Once per directory keeps a write into a large
// directory from scanning it every time.
func (f *Backend) reclaimOnce(parent *dirfd.Parent) {
	key, err := parent.Identity()
	if err != nil {
		return
	}
	if _, seen := f.reclaimed.LoadOrStore(key, struct{}{}); seen {
		return
	}
	n, err := atomicwrite.Reclaim(parent)
	switch {
	case err != nil:
		f.log.Warn("could not scan for abandoned staging directories", zap.String("dir", parent.Path()), zap.Error(err))
	case n > 0:
		f.log.Info("reclaimed abandoned staging directories", zap.String("dir", parent.Path()), zap.Int("count", n))
	}
}
