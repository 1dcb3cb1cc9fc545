package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// The log's limits.
const (
	// DefaultMaxBytes is the size at which the log rotates when
	// LogOptions.MaxBytes is 0: 64 MiB.
	DefaultMaxBytes = 64 << 20
	// DefaultKeep is the number of rotated files kept when LogOptions.Keep
	// is 0 (audit.jsonl.1 .. audit.jsonl.3).
	DefaultKeep = 3
	// DefaultQueue is the number of records waiting for the writer when
	// LogOptions.Queue is 0; an Append beyond it is lost (and counted).
	DefaultQueue = 4096
	// maxBatch is the most bytes the writer puts in one write(2) and one
	// fdatasync: it bounds the writer's buffer, not the delay.
	maxBatch = 1 << 20
)

// CodeUnencodable is the code of a record the log could not encode as
// given (a time outside years 0-9999): it is written with the time it was
// written and its identifying fields only.
const CodeUnencodable = "AUDIT_UNENCODABLE"

// LogOptions configures OpenLog.
type LogOptions struct {
	// Path is the log file. Its directory is created (0700) when missing;
	// the file is created 0600 and appended to (O_APPEND).
	Path string
	// MaxBytes is the size in bytes past which the file rotates (0:
	// DefaultMaxBytes). A batch that would take the file past it goes to a
	// fresh file; a single batch larger than MaxBytes is written whole.
	MaxBytes int64
	// Keep is how many rotated files are kept, Path.1 the newest (0:
	// DefaultKeep).
	Keep int
	// Queue is how many records may wait for the writer (0: DefaultQueue).
	Queue int
	// SessionBudget is how many bytes of records one session may write
	// before its calls are refused (Admit); 0 is Keep * MaxBytes / 4, and
	// a larger one is refused. A record leaves the log only after more
	// than Keep * MaxBytes / 2 bytes were written after it (each of the
	// Keep+1 rotations that take its file away needs the file it closes
	// plus the batch that did not fit to pass MaxBytes), so one session,
	// whose records stop at its budget plus one record per call it had in
	// flight then, cannot rotate any record out by itself, its own earlier
	// records included.
	SessionBudget int64
	// Log receives the reports of lost records (error level); nil logs
	// nothing.
	Log *zap.Logger
	// Stderr receives the same reports, one line each; nil writes none.
	Stderr io.Writer
}

// Log is the audit log file: a Sink that appends each record as one line of
// JSON (JSON Lines) to a file, rotated by size. Append only queues the
// record; one writer goroutine writes what has queued in one write(2) and
// makes it durable with one fdatasync (a group commit), so a record is on
// disk within about one fdatasync of its Append without a sync per call.
//
// Append never waits for the disk: when the queue is full, or a write
// fails (a full disk), the records are lost and counted; the first loss of
// an episode is reported at error level to LogOptions.Log and on
// LogOptions.Stderr, and the next record written carries the count in its
// Lost field. Several processes may append to one file: each batch is one
// O_APPEND write, and rotation is serialized by flock(2) on Path+".lock".
//
// Each record is bounded (MaxRecordBytes), and each session may write at
// most LogOptions.SessionBudget bytes: past it, Admit refuses its calls,
// so no session's records rotate earlier ones out of the log.
//
// It does not protect the records from a process that may write the file
// (the file is 0600 and belongs in a directory commands cannot reach), nor
// keep more than Keep rotated files.
type Log struct {
	opts LogOptions

	mu     sync.RWMutex // guards closed against Append's send
	closed bool
	queue  chan item
	done   chan struct{}

	budgets budgets

	lost atomic.Int64 // records lost and not yet carried by an encoded record
	loss episode
	// Since the log was opened: records written (on disk, synced) and
	// lost (Counts).
	totalWritten, totalLost atomic.Int64

	// The writer goroutine's own state.
	f     *os.File
	lock  *os.File // Path+".lock", opened the first time rotation needs it
	torn  bool     // the last write stopped mid-line
	stuck bool     // the last rotation failed (reported)
	err   error    // the last batch's write or sync error, returned by Close
}

// OpenLog opens (creating as needed) the log file of opts and starts its
// writer. It returns an error when the directory or the file cannot be
// created or opened, or opts is out of range (negative sizes).
func OpenLog(opts LogOptions) (*Log, error) {
	if opts.Path == "" {
		return nil, errors.New("audit log: no path")
	}
	if opts.MaxBytes < 0 || opts.Keep < 0 || opts.Queue < 0 || opts.SessionBudget < 0 {
		return nil, fmt.Errorf("audit log %s: negative limit (max bytes %d, keep %d, queue %d, session budget %d)", opts.Path, opts.MaxBytes, opts.Keep, opts.Queue, opts.SessionBudget)
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Keep == 0 {
		opts.Keep = DefaultKeep
	}
	if opts.Queue == 0 {
		opts.Queue = DefaultQueue
	}
	if most := int64(opts.Keep) * (opts.MaxBytes / 4); opts.SessionBudget == 0 {
		opts.SessionBudget = most
	} else if opts.SessionBudget > most {
		return nil, fmt.Errorf("audit log %s: a session budget of %d bytes could rotate a session's own records out: at most %d (keep * max bytes / 4)", opts.Path, opts.SessionBudget, most)
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if err := os.MkdirAll(filepath.Dir(opts.Path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	f, err := openFile(opts.Path)
	if err != nil {
		return nil, err
	}
	l := &Log{opts: opts, queue: make(chan item, opts.Queue), done: make(chan struct{}), f: f, budgets: budgets{used: map[string]*use{}}}
	go l.run()
	return l, nil
}

// Append queues r to be written, bounded to one line of at most
// MaxRecordBytes, and charges it to its session's budget (Admit). It never
// blocks on the disk: when the queue is full, or the log is closed, r is
// lost and counted. A record of a call the server refused before its tool
// ran (Decision Refused) is not written once its session is past its
// budget.
func (l *Log) Append(r Record) {
	b := EncodeBounded(r)
	if !l.charge(r, int64(len(b))) {
		return
	}
	l.queueLine(r, b)
}

// item is a record queued and its line.
type item struct {
	r Record
	b []byte
}

// queueLine queues r, encoded as b, for the writer.
func (l *Log) queueLine(r Record, b []byte) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.lose(1, 0, errors.New("appended after close"))
		return
	}
	select {
	case l.queue <- item{r: r, b: b}:
	default:
		l.lose(1, 0, fmt.Errorf("queue full (%d records waiting)", cap(l.queue)))
	}
}

// Close writes and syncs every queued record, stops the writer and closes
// the file. It returns the error of the last batch when that batch could
// not be written or synced (its records are counted as lost and reported),
// nil when it reached the disk. Calling it again does nothing.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.queue)
	l.mu.Unlock()
	<-l.done
	if err := l.f.Close(); err != nil && l.err == nil {
		l.err = fmt.Errorf("audit log: %w", err)
	}
	if l.lock != nil {
		_ = l.lock.Close()
	}
	return l.err
}

// openFile opens path for appending, creating it 0600.
func openFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return f, nil
}

// syncDir makes a name created in path's directory durable (best effort: a
// directory that cannot be synced loses only the name's durability).
func syncDir(path string) {
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// marshal encodes r as one line. A Record holds only strings, numbers and
// times, so Marshal fails only for a time outside years 0-9999: that
// record is kept, stamped now and marked AUDIT_UNENCODABLE.
func marshal(r Record) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		b, _ = json.Marshal(Record{Time: time.Now().UTC(), Session: r.Session, Client: r.Client, Principal: r.Principal, Tool: r.Tool, Call: r.Call, Decision: r.Decision, Outcome: Error, Code: CodeUnencodable, Lost: r.Lost})
	}
	return append(b, '\n')
}

var _ Sink = (*Log)(nil)

// Counts returns how many records the log has written (reached the file
// and were synced) and lost (its queue was full, or their write or sync
// failed) since it was opened; each record is counted once, lost or
// written. Safe for concurrent use (metrics read it, issue 39).
func (l *Log) Counts() (written, lost int64) {
	return l.totalWritten.Load(), l.totalLost.Load()
}
