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
// Out of scope, never read and never journaled: `.git`, the deny-read set,
// credential file names at any depth (the deny-read defaults anchored in a
// home, "~/" stripped, plus *.pem and *.key), files larger than the
// journal's cap, gitignored paths (node_modules, build output), the
// journal's own directory, and special files. A skipped entry is compared
// by its own stat: when it changed, or moved into or out of the scope, the
// entry lists it in NotJournaled with its reason in NotJournaledWhy; a
// change deep inside a skipped directory is not seen.
package cmdjournal

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-go/harness/services/journal"
	"github.com/dsh-go/harness/services/sandbox"
)

// Options configure New.
type Options struct {
	// Journal is the store; required.
	Journal *journal.Journal
	// DenyRead is the deny-read set: nothing it denies is read.
	DenyRead sandbox.DenyRead
	// Logger gets a debug line per walk; nil logs nothing.
	Logger *zap.Logger
}

// Journaler snapshots workspace roots around commands. It keeps the last
// walk of each root in memory, so a snapshot reads only the files whose
// stat moved since (or whose content the journal no longer holds). Safe
// for concurrent use: walks of one root never overlap; commands running at
// once in one root each see the others' changes made while they ran.
type Journaler struct {
	store *journal.Journal
	scope scope
	log   *zap.Logger

	mu    sync.Mutex
	roots map[string]*rootState
}

// rootState is one root's last walk, under its own lock.
type rootState struct {
	mu   sync.Mutex
	last *manifest
}

// New returns a Journaler. Errors: a nil Journal.
func New(o Options) (*Journaler, error) {
	if o.Journal == nil {
		return nil, errors.New("cmdjournal: a journal is required")
	}
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	dir, err := filepath.EvalSymlinks(o.Journal.Dir())
	if err != nil {
		dir = filepath.Clean(o.Journal.Dir())
	}
	return &Journaler{
		store: o.Journal,
		scope: scope{deny: o.DenyRead, secrets: secretPatterns(), maxFile: o.Journal.MaxBytes(), journal: dir},
		log:   log.Named("cmdjournal"), roots: map[string]*rootState{},
	}, nil
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

// Snapshot is the state of a command's roots before it ran. Bytes is the
// content its walks added to the journal.
type Snapshot struct {
	j     *Journaler
	pre   []*manifest
	Bytes int64
}

// Begin snapshots roots (absolute canonical directories: the command's
// writable workspace roots) before a command: it walks each, keeping in
// the journal the content of every file in scope new or changed since the
// root's previous walk. Errors: a root cannot be walked (missing, in the
// deny-read set), a read fails, or the journal fails (*journal.Error); the
// command then runs unjournaled. session is the command's session ("" for
// none): making room for the contents never drops an earlier change of
// it (journal.Journal.Prepare; *journal.Error CodeFull instead).
func (j *Journaler) Begin(session string, roots []string) (*Snapshot, error) {
	s := &Snapshot{j: j}
	for _, root := range roots {
		m, added, err := j.walk(root, nil, session)
		if err != nil {
			return nil, err
		}
		s.pre = append(s.pre, m)
		s.Bytes += added
	}
	return s, nil
}

// walk walks root against base (nil: the root's last walk, less the
// contents the journal no longer holds), keeping the contents it reads in
// the journal (for a change of session: journal.Journal.Prepare), and makes
// the result the root's last walk.
func (j *Journaler) walk(root string, base *manifest, session string) (*manifest, int64, error) {
	start := time.Now()
	rs := j.root(root)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if base == nil && rs.last != nil {
		if err := j.forgetLacking(rs.last); err != nil {
			return nil, 0, err
		}
		base = rs.last
	}
	k := &keeper{store: j.store, session: session}
	m, err := walk(root, base, j.scope, k.put)
	if err != nil {
		k.abort()
		return nil, 0, err
	}
	stored, err := k.keep()
	if err != nil {
		return nil, 0, err
	}
	rs.last = m
	j.log.Debug("walk", zap.String("root", root), zap.Int("entries", len(m.entries)),
		zap.Int64("bytes", stored), zap.Duration("took", time.Since(start)))
	return m, stored, nil
}

// forgetLacking clears the content key of every file of m whose content
// the journal no longer holds (its segment was dropped, or it passed the
// cap), so the next walk reads it again.
func (j *Journaler) forgetLacking(m *manifest) error {
	keys := make([]string, 0, len(m.entries))
	for _, st := range m.entries {
		if st.typ == fileType && st.hash != "" {
			keys = append(keys, st.hash)
		}
	}
	lacking, err := j.store.Lacks(keys)
	if err != nil || len(lacking) == 0 {
		return err
	}
	gone := make(map[string]bool, len(lacking))
	for _, k := range lacking {
		gone[k] = true
	}
	for _, st := range m.entries {
		if gone[st.hash] {
			st.hash = ""
		}
	}
	return nil
}

// keeper stores the contents one walk reads in journal transactions kept
// without an entry: one begun at the first content, kept and followed by
// a fresh one when the next content would pass its cap (so no content
// makes the others not kept), the last kept at the end.
type keeper struct {
	store   *journal.Journal
	session string // whose change the contents are for
	tx      *journal.Txn
	stored  int64
}

// put stores size bytes (at most: a file growing meanwhile is read up to
// its size at the fstat) of the regular file fd, size no larger than the
// journal's cap (the walk skips larger files), and returns their key.
func (k *keeper) put(fd int, size int64) (string, error) {
	if k.tx != nil && size > k.tx.Room() {
		if err := k.flush(); err != nil {
			return "", err
		}
	}
	if k.tx == nil {
		if err := k.store.Prepare(k.session); err != nil {
			return "", err
		}
		tx, err := k.store.Begin(journal.Entry{Tool: "exec", Kind: journal.Command})
		if err != nil {
			return "", err
		}
		k.tx = tx
	}
	// The descriptor stays the walk's: read it through a duplicate.
	dup, err := dupFile(fd)
	if err != nil {
		return "", err
	}
	defer func() { _ = dup.Close() }()
	hash, _, err := k.tx.AddBlob(io.LimitReader(dup, size), size)
	return hash, err
}

// flush keeps the open transaction's contents, if any.
func (k *keeper) flush() error {
	if k.tx == nil {
		return nil
	}
	stored, _, err := k.tx.Keep()
	k.tx = nil
	k.stored += stored
	return err
}

// keep ends the walk's transactions keeping their contents; the bytes
// they stored.
func (k *keeper) keep() (int64, error) {
	err := k.flush()
	return k.stored, err
}

func (k *keeper) abort() {
	if k.tx != nil {
		k.tx.Abort()
	}
}

// Call names the call a command ran for (audit.Record's fields).
type Call struct {
	Session, Client, Call string
}

// Result is what End recorded: the entry (ID "" when the command changed
// nothing in scope: none is recorded) and the paths it changed that are
// out of scope, absolute, with their reasons in Why (see the package doc).
type Result struct {
	Entry        journal.Entry
	NotJournaled []string
	// Why is each NotJournaled path's reason (an absolute path: a skip
	// reason such as "over the journal cap" or "a credential file name").
	Why map[string]string
}

// End walks the roots again after the command ended (exited, was killed,
// timed out) and records one entry of Kind Command, tool "exec", for c:
// Paths the paths it changed (absolute, parents before children; an entry
// created, deleted or of another type stands for everything beneath it,
// as a file tool's recursive delete does), Before the nodes of every entry
// changed as they were (a file's content as Begin kept it), After as they
// are now; its status Applied. Errors: a walk or a read fails, the
// journal fails, or the content before the command is no longer in the
// journal (the cap dropped it, or the snapshot passed the cap): nothing is
// recorded.
func (s *Snapshot) End(c Call) (Result, error) {
	var res Result
	e := journal.Entry{Session: c.Session, Client: c.Client, Tool: "exec", Call: c.Call, Kind: journal.Command}
	for _, pre := range s.pre {
		post, _, err := s.j.walk(pre.root, pre, c.Session)
		if err != nil {
			return Result{}, err
		}
		changes, skipped := diff(pre, post)
		replaced := map[string]bool{}
		for _, ch := range changes {
			p := joinAbs(pre.root, ch.rel)
			if !replaced[parent(ch.rel)] {
				e.Paths = append(e.Paths, p)
			}
			if ch.before == nil || ch.after == nil || ch.before.typ != ch.after.typ || replaced[parent(ch.rel)] {
				replaced[ch.rel] = true
			}
			if ch.before != nil {
				e.Before = append(e.Before, ch.before.node(p))
			}
			if ch.after != nil {
				e.After = append(e.After, ch.after.node(p))
			}
		}
		for _, rel := range skipped {
			p := joinAbs(pre.root, rel)
			res.NotJournaled = append(res.NotJournaled, p)
			if res.Why == nil {
				res.Why = map[string]string{}
			}
			res.Why[p] = skipReason(pre, post, rel)
		}
	}
	e.NotJournaled, e.NotJournaledWhy = res.NotJournaled, res.Why
	if len(e.Paths) == 0 {
		return res, nil
	}
	rec, err := s.j.record(e)
	if err != nil {
		return Result{}, err
	}
	res.Entry = rec
	return res, nil
}

// record commits e with the contents of its Before files, copied into the
// segment the entry goes to (a segment holds the contents of its entries,
// so dropping it drops exactly them), and marks it Applied.
func (j *Journaler) record(e journal.Entry) (journal.Entry, error) {
	if err := j.store.Prepare(e.Session); err != nil {
		return journal.Entry{}, err
	}
	before := e.Before
	tx, err := j.store.Begin(e)
	if err != nil {
		return journal.Entry{}, err
	}
	for _, n := range before {
		if n.Type != journal.File {
			continue
		}
		if err := copyBlob(j.store, tx, n); err != nil {
			tx.Abort()
			return journal.Entry{}, err
		}
	}
	tx.SetBefore(before)
	rec, err := tx.Commit()
	if err != nil {
		return journal.Entry{}, err
	}
	if err := j.store.Finish(rec.ID, journal.Applied, nil); err != nil {
		return rec, err
	}
	rec.Status = journal.Applied
	return rec, nil
}

// copyBlob adds the content of the file node n, read from the journal,
// to tx. Errors: the content is gone (*journal.Error), a read fails.
func copyBlob(store *journal.Journal, tx *journal.Txn, n journal.Node) error {
	rc, size, err := store.OpenBlob(n.Hash)
	if err != nil {
		return errors.New("the content of " + n.Path + " before the command is no longer in the journal: " + err.Error())
	}
	defer func() { _ = rc.Close() }()
	_, _, err = tx.AddBlob(rc, size)
	return err
}

// dupFile returns a duplicate of fd as an *os.File read from its start.
func dupFile(fd int) (*os.File, error) {
	dup, err := dupCloexec(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "")
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// Describe is the audit record's Command.Journal for r: the entry id, or
// why there is none, and the count of changed paths not journaled with
// their distinct reasons.
func Describe(r Result) string {
	s := "no change in the journaled workspace"
	if r.Entry.ID != "" {
		s = r.Entry.ID
		if !r.Entry.Kept {
			s += " (not kept: " + r.Entry.NotKept + ")"
		}
	}
	if n := len(r.NotJournaled); n > 0 {
		var whys []string
		for _, p := range r.NotJournaled {
			if w := r.Why[p]; w != "" && !slices.Contains(whys, w) {
				whys = append(whys, w)
			}
		}
		s += "; " + strconv.Itoa(n) + " changed path(s) not journaled (" + strings.Join(whys, ", ") + ")"
	}
	return s
}

// skipReason is why the walks before (pre) and after (post) a command
// left rel out of their scope: its own skip, or its nearest skipped
// ancestor's, the later walk's first.
func skipReason(pre, post *manifest, rel string) string {
	for p := rel; ; p = parent(p) {
		for _, m := range []*manifest{post, pre} {
			if sk, ok := m.skipped[p]; ok {
				return sk.why
			}
		}
		if p == "" {
			return ""
		}
	}
}
