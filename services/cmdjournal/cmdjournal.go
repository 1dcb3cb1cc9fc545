// Package cmdjournal journals what a shell command changes in the
// workspace (--journal-commands, issue 25), the way Gemini CLI's
// checkpoints snapshot a project before a tool runs, storing only what
// changed since the last snapshot: before a command, Begin walks each
// workspace root (stat only) and keeps in the journal the content of every
// file new or changed since its previous walk (the first walk: every file
// in scope); after it, End walks again, diffs, and records one journal
// entry (Kind Command) with the paths the command created, modified,
// deleted or re-moded, their state before (the content kept) and after, so
// `harness undo` restores them like any other entry.
//
// Out of scope, never read and never journaled: `.git`, the deny-read set
// (secrets never reach the journal), gitignored paths (node_modules, build
// output), and special files. A skipped entry is compared by its own stat:
// when it changed, moved into or out of the scope, the entry lists it in
// NotJournaled; a change deep inside a skipped directory is not seen.
package cmdjournal

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-go/harness/services/journal"
	"github.com/dsh-go/harness/services/sandbox"
)

// Store is the journal as snapshots use it (*journal.Journal).
type Store interface {
	Put(fd int, size int64) (hash string, added int64, err error)
	RecordCommand(e journal.Entry) (journal.Entry, error)
}

// Options configure New.
type Options struct {
	// Store is the journal; required.
	Store Store
	// DenyRead is the deny-read set: nothing it denies is read.
	DenyRead sandbox.DenyRead
	// Logger gets a debug line per snapshot; nil logs nothing.
	Logger *zap.Logger
}

// Journaler snapshots workspace roots around commands. It keeps the last
// walk of each root in memory, so a snapshot reads only the files whose
// stat moved since. Safe for concurrent use: walks of one root never
// overlap (commands running at once in one root each see the others'
// changes made while they ran).
type Journaler struct {
	store Store
	deny  sandbox.DenyRead
	log   *zap.Logger

	mu    sync.Mutex
	roots map[string]*rootState
}

// rootState is one root's last walk, under its own lock.
type rootState struct {
	mu   sync.Mutex
	last *manifest
}

// New returns a Journaler. Errors: a nil Store.
func New(o Options) (*Journaler, error) {
	if o.Store == nil {
		return nil, errors.New("cmdjournal: a journal store is required")
	}
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Journaler{store: o.Store, deny: o.DenyRead, log: log.Named("cmdjournal"), roots: map[string]*rootState{}}, nil
}

// root returns the state of root, made on first use.
func (j *Journaler) root(root string) *rootState {
	j.mu.Lock()
	defer j.mu.Unlock()
	r := j.roots[root]
	if r == nil {
		r = &rootState{}
		j.roots[root] = r
	}
	return r
}

// Snapshot is the state of a command's roots before it ran.
type Snapshot struct {
	j     *Journaler
	pre   []*manifest
	Bytes int64 // the content this snapshot added to the journal
}

// Begin snapshots roots (absolute canonical directories, the command's
// writable workspace roots) before a command: it walks each, keeping in
// the journal the content of every file in scope new or changed since the
// root's previous walk. Errors: a root cannot be walked (missing, denied),
// a read or the journal fails; the command then runs unjournaled.
func (j *Journaler) Begin(roots []string) (*Snapshot, error) {
	s := &Snapshot{j: j}
	for _, root := range roots {
		start := time.Now()
		rs := j.root(root)
		rs.mu.Lock()
		m, added, err := walk(root, rs.last, j.deny, j.store.Put)
		if err == nil {
			rs.last = m
		}
		rs.mu.Unlock()
		if err != nil {
			return nil, err
		}
		s.pre = append(s.pre, m)
		s.Bytes += added
		j.log.Debug("snapshot", zap.String("root", root), zap.Int("entries", len(m.entries)),
			zap.Int64("bytes", added), zap.Duration("took", time.Since(start)))
	}
	return s, nil
}

// Call names the call a command ran for (audit.Record's fields).
type Call struct {
	Session, Client, Call string
}

// Result is what End recorded: the entry (ID "" when the command changed
// nothing in scope: no entry is recorded) and the paths it changed that
// are not journaled (see the package doc), absolute.
type Result struct {
	Entry        journal.Entry
	NotJournaled []string
}

// End walks the roots again after the command ended (exited, was killed,
// timed out) and records one entry of Kind Command, tool "exec", for c:
// Paths the changed paths (absolute, parents before children), Before
// their nodes before (files: the content Begin kept), After their nodes
// now. Errors: a walk, a read or the journal fails (nothing is recorded).
func (s *Snapshot) End(_ context.Context, c Call) (Result, error) {
	var res Result
	e := journal.Entry{Session: c.Session, Client: c.Client, Tool: "exec", Call: c.Call, Kind: journal.Command}
	for _, pre := range s.pre {
		rs := s.j.root(pre.root)
		rs.mu.Lock()
		post, added, err := walk(pre.root, pre, s.j.deny, s.j.store.Put)
		if err == nil {
			rs.last = post
		}
		rs.mu.Unlock()
		if err != nil {
			return Result{}, err
		}
		e.Bytes += added
		changes, skipped := diff(pre, post)
		for _, ch := range changes {
			p := joinAbs(pre.root, ch.rel)
			e.Paths = append(e.Paths, p)
			if ch.before != nil {
				e.Before = append(e.Before, ch.before.node(p))
			}
			if ch.after != nil {
				e.After = append(e.After, ch.after.node(p))
			}
		}
		for _, rel := range skipped {
			res.NotJournaled = append(res.NotJournaled, joinAbs(pre.root, rel))
		}
	}
	e.NotJournaled = res.NotJournaled
	if len(e.Paths) == 0 {
		return res, nil
	}
	e.Kept = true
	rec, err := s.j.store.RecordCommand(e)
	if err != nil {
		return Result{}, err
	}
	res.Entry = rec
	return res, nil
}

// Describe is the audit record's Command.Journal for r: the entry id, or
// why there is none, and the paths not journaled.
func Describe(r Result) string {
	s := "no change in the journaled workspace"
	if r.Entry.ID != "" {
		s = r.Entry.ID
		if !r.Entry.Kept {
			s += " (not kept: " + r.Entry.NotKept + ")"
		}
	}
	if n := len(r.NotJournaled); n > 0 {
		s += "; " + strconv.Itoa(n) + " changed path(s) not journaled (.git, deny-read or gitignored)"
	}
	return s
}
