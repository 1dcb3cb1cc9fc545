package fsbackend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/journal"
)

// journalReady readies the journal for a change of the call ctx carries
// (Settings.Journal; nil is off): it opens or rolls its segment here,
// outside the fence, since no file of the journal can be opened under the
// fence's Landlock domain. Errors are the refusal: fs.CodeJournalFull when
// keeping the change would drop an earlier change of the call's session,
// else fs.CodeJournal.
func (f *Backend) journalReady(ctx context.Context, op, dp string) error {
	if f.cfg.Journal == nil {
		return nil
	}
	if err := f.cfg.Journal.Prepare(audit.FromContext(ctx).Record().Session); err != nil {
		return journalErr(op, dp, err)
	}
	return nil
}

// journalErr is the refusal of a change the journal could not keep:
// fs.CodeJournalFull for a journal.CodeFull, else fs.CodeJournal.
func journalErr(op, dp string, err error) *fs.Error {
	if je, ok := errors.AsType[*journal.Error](err); ok && je.Code == journal.CodeFull {
		return newErr(fs.CodeJournalFull, op, dp, err, "cannot %s %q: %v", op, dp, err)
	}
	return newErr(fs.CodeJournal, op, dp, err,
		"cannot %s %q: the journal could not keep its prior state, so nothing was changed: %v", op, dp, err)
}

// change is one mutation being journaled: begun under the target's lock
// once its preconditions passed, committed (durable) right before it
// publishes, finished after. A nil *change (the journal is off) does
// nothing.
type change struct {
	f      *Backend
	ctx    context.Context
	op, dp string
	tx     *journal.Txn
	entry  journal.Entry
	before map[string]string // the content key of each captured path
}

// beginChange starts journaling a mutation of kind on the canonical paths,
// for the call ctx carries. Errors are the refusal (fs.CodeJournal).
func (f *Backend) beginChange(ctx context.Context, kind journal.Kind, op, dp string, paths ...string) (*change, error) {
	j := f.cfg.Journal
	if j == nil {
		return nil, nil
	}
	r := audit.FromContext(ctx).Record()
	tool := r.Tool
	if tool == "" {
		tool = op
	}
	tx, err := j.Begin(journal.Entry{Session: r.Session, Client: r.Client, Tool: tool, Call: r.Call, Kind: kind, Paths: paths})
	if err != nil {
		return nil, journalErr(op, dp, err)
	}
	tx.SetContext(ctx) // a cancelled call stops reading its prior content
	return &change{f: f, ctx: ctx, op: op, dp: dp, tx: tx, before: map[string]string{}}, nil
}

// capture keeps the prior state of the entry name in parent, canonical
// path p: with deep, a directory's whole tree; without, its own node. A
// failure aborts the change and is its refusal.
func (c *change) capture(parent *dirfd.Parent, name, p string, deep bool) ([]journal.Node, error) {
	if c == nil {
		return nil, nil
	}
	capture := c.tx.Capture
	if !deep {
		capture = c.tx.CaptureNode
	}
	nodes, err := capture(parent, name, p)
	if err != nil {
		c.tx.Abort()
		return nil, journalErr(c.op, c.dp, err)
	}
	for _, n := range nodes {
		c.before[n.Path] = n.Hash
	}
	return nodes, nil
}

// commit makes the entry durable with after, the state the change will
// leave: after it returns nil the change may publish, and must be
// finished. A failure is the change's refusal.
func (c *change) commit(after ...journal.Node) error {
	s, err := c.stage(after...)
	if err != nil {
		return err
	}
	return s.wait()
}

// staged is the durability of a staged change: start begins the
// journal's sync (atomicwrite.Request.BeforeSync: with the temp file's),
// wait returns once it is durable (atomicwrite.Request.BeforePublish),
// its failure the change's refusal (fs.CodeJournal). Both do nothing when
// the journal is off.
type staged struct {
	start func()
	wait  func() error
}

// stage is commit whose sync the publication starts and waits for; the
// change must be finished either way. A failure is the change's refusal.
func (c *change) stage(after ...journal.Node) (staged, error) {
	if c == nil {
		return staged{start: func() {}, wait: func() error { return nil }}, nil
	}
	c.tx.SetAfter(after)
	e, s, err := c.tx.Stage()
	if err != nil {
		return staged{}, journalErr(c.op, c.dp, err)
	}
	c.entry = e
	return staged{start: s.Start, wait: func() error {
		if err := s.Wait(); err != nil {
			return journalErr(c.op, c.dp, err)
		}
		return nil
	}}, nil
}

// notKept is the sentence a result carries when the change's prior state
// was too large to keep ("" otherwise, and when the journal is off).
func (c *change) notKept() string {
	if c == nil || c.entry.ID == "" || c.entry.Kept {
		return ""
	}
	return "The prior content (" + c.entry.NotKept + ") was not kept in the journal: this change cannot be undone."
}

// hash returns the content key captured for the path p ("" when none).
func (c *change) hash(p string) string {
	if c == nil {
		return ""
	}
	return c.before[p]
}

// finish records the outcome of the committed change (applied: it
// changed something, even if it failed part way; after, when set, the
// state it left, known better now than at commit) and reports each path it
// changed to the call's audit record.
func (c *change) finish(applied bool, after ...journal.Node) {
	if c == nil {
		return
	}
	status := journal.Applied
	if !applied {
		status, after = journal.Failed, nil
	}
	if ferr := c.f.cfg.Journal.Finish(c.entry.ID, status, after); ferr != nil {
		c.f.log.Warn("journal: could not record the outcome of a change (it stays pending)",
			zap.String("entry", c.entry.ID), zap.String("status", string(status)), zap.Error(ferr))
	}
	if !applied {
		return
	}
	if !c.entry.Kept {
		c.f.log.Info("journal: a change's prior state was not kept, it cannot be undone",
			zap.String("entry", c.entry.ID), zap.String("path", c.dp), zap.String("reason", c.entry.NotKept))
	}
	rec := audit.FromContext(c.ctx)
	if after == nil {
		after = c.entry.After
	}
	afterHash := map[string]string{}
	for _, n := range after {
		afterHash[n.Path] = n.Hash
	}
	id := c.entry.ID
	if !c.entry.Kept {
		id = "" // nothing keeps its prior state: it cannot be undone
	}
	for _, p := range c.entry.Paths {
		rec.AddChange(audit.Change{Path: p, Before: c.before[p], After: afterHash[p], Journal: id})
	}
}

// contentKey is the journal's key of content ("sha256:<hex>").
func contentKey(content string) string {
	h := sha256.Sum256([]byte(content))
	return "sha256:" + hex.EncodeToString(h[:])
}

// node is the state st describes at the canonical path p.
func node(p string, st *unix.Stat_t, hash string) journal.Node {
	n := journal.Node{
		Path: p, Mode: dirfd.Perm(st), UID: st.Uid, GID: st.Gid,
		MTime: st.Mtim.Nano(), Ino: st.Ino, Dev: dirfd.Dev(st),
	}
	switch {
	case dirfd.IsRegular(st):
		n.Type, n.Size, n.Hash = journal.File, st.Size, hash
	case dirfd.IsDir(st):
		n.Type = journal.Dir
	case dirfd.IsSymlink(st):
		n.Type = journal.Symlink
	default:
		n.Type = journal.Special
	}
	return n
}
