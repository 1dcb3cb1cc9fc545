package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// flushBytes is how much a Txn buffers before it writes: a small change is
// one write, a large content streams through in pieces of about this size.
const flushBytes = 1 << 20

// Txn is one change being recorded: Begin starts it, Capture and AddBlob
// add the prior state and its contents, Commit writes the entry (Pending)
// and makes it durable, Abort drops everything it wrote. It holds the
// journal's append lock (in this process and across processes) from Begin
// to Commit or Abort, which must follow promptly; it is not safe for
// concurrent use. It only writes through descriptors Prepare opened, so it
// runs under a Landlock domain that excludes the journal.
type Txn struct {
	j       *Journal
	e       Entry
	start   int64 // where its frames begin in the segment
	flushed int64 // the segment offset of buf[0]
	buf     []byte
	blobs   map[[32]byte]struct{} // the blobs it added
	content int64                 // the prior content's bytes, kept or not
	stored  int64                 // the bytes of the blob frames it added
	over    bool                  // the prior content passed the cap: nothing kept
	done    bool
	ctx     context.Context // nil: never cancelled
}

// SetContext makes ctx stop the Txn's reads: once it is done, AddBlob and
// Capture return its error (context.Canceled, context.DeadlineExceeded)
// before their next chunk of 64 KiB. The caller then aborts the Txn.
func (t *Txn) SetContext(ctx context.Context) { t.ctx = ctx }

// cancelled returns the error of the Txn's context once it is done.
func (t *Txn) cancelled() error {
	if t.ctx == nil {
		return nil
	}
	return t.ctx.Err()
}

// Room returns how many more bytes of prior content the change can keep
// under the cap (0 once it passed it): a content larger is not kept.
func (t *Txn) Room() int64 {
	if t.over {
		return 0
	}
	return max(t.j.opts.MaxBytes-t.content, 0)
}

// skipContent counts size bytes of prior content that will not be read:
// they pass the cap, so the change keeps no content.
func (t *Txn) skipContent(size int64) error {
	if !t.over {
		if err := t.giveUp(); err != nil {
			return err
		}
	}
	t.content += size
	return nil
}

// Begin starts recording a change described by e (Session, Client, Tool,
// Call, Kind, Paths; After when known): it takes the append lock and gives
// e a fresh ID and the current Time. The caller must end it with Commit or
// Abort. Errors are *Error with CodeFailed (the segment is unreadable or
// another process dropped it: call Prepare and try again).
func (j *Journal) Begin(e Entry) (*Txn, error) {
	j.mu.Lock()
	if err := j.open(); err != nil {
		j.mu.Unlock()
		return nil, err
	}
	if err := j.flock(); err != nil {
		j.mu.Unlock()
		return nil, err
	}
	if err := j.current(e.Session); err != nil {
		j.funlock()
		j.mu.Unlock()
		return nil, err
	}
	now := time.Now().UTC()
	e.ID, e.Time, e.Before, e.Status = j.ids.next(now), now, nil, Pending
	return &Txn{j: j, e: e, start: j.seg.end, flushed: j.seg.end, blobs: map[[32]byte]struct{}{}}, nil
}

// ID returns the id of the entry being recorded.
func (t *Txn) ID() string { return t.e.ID }

// SetAfter sets the state the change will leave (Entry.After).
func (t *Txn) SetAfter(after []Node) { t.e.After = after }

func (t *Txn) pos() int64 { return t.flushed + int64(len(t.buf)) }

// flush writes the buffer at its offset.
func (t *Txn) flush() error {
	if len(t.buf) == 0 {
		return nil
	}
	if _, err := t.j.seg.f.WriteAt(t.buf, t.flushed); err != nil {
		return t.j.writeErr(err)
	}
	t.flushed += int64(len(t.buf))
	t.buf = t.buf[:0]
	return nil
}

// rewind drops everything written from off on.
func (t *Txn) rewind(off int64) error {
	if off >= t.flushed {
		t.buf = t.buf[:off-t.flushed]
		return nil
	}
	t.buf, t.flushed = t.buf[:0], off
	if err := t.j.seg.f.Truncate(off); err != nil {
		return t.j.writeErr(err)
	}
	return nil
}

func (j *Journal) writeErr(err error) *Error {
	return newErr(CodeFailed, "record", err, "cannot append to the journal segment %s", filepath.Join(j.opts.Dir, segName(j.seg.num)))
}

// AddBlob stores the content r yields (size bytes announced, -1 when
// unknown) unless the segment holds it already, and returns its key
// ("sha256:<hex>") and length. Contents past the cap (the change's prior
// content summed over every AddBlob and Capture) are hashed but not kept:
// the entry is then committed with Kept false and nothing of its contents.
// A done context (SetContext) stops the read between chunks.
// Errors: reading r (returned as they are), the context's, *Error with
// CodeFailed.
func (t *Txn) AddBlob(r io.Reader, size int64) (string, int64, error) {
	if !t.over && size >= 0 && t.content+size > t.j.opts.MaxBytes {
		if err := t.giveUp(); err != nil {
			return "", 0, err
		}
	}
	sum := sha256.New()
	if t.over {
		n, err := t.hashOnly(sum, r)
		t.content += n
		return key(sum), n, err
	}
	frameOff := t.pos()
	t.buf = append(t.buf, make([]byte, headerLen)...)
	crc := crcKind(kindBlob)
	var n int64
	var chunk []byte // for a content not kept
	for {
		var b []byte
		if t.over {
			if chunk == nil {
				chunk = make([]byte, 64<<10)
			}
			b = chunk
		} else {
			// Read straight into the buffer's spare room: a size known
			// plus one byte to meet the end at once.
			want := 64 << 10
			if size >= 0 && n <= size && size-n < int64(want) {
				want = int(size-n) + 1
			}
			t.buf = slices.Grow(t.buf, want)
			b = t.buf[len(t.buf) : len(t.buf)+want]
		}
		if err := t.cancelled(); err != nil {
			_ = t.rewind(frameOff)
			return "", 0, err
		}
		m, rerr := r.Read(b)
		if m > 0 {
			b = b[:m]
			sum.Write(b)
			n += int64(m)
			if !t.over {
				crc = crc32.Update(crc, castagnoli, b)
				t.buf = t.buf[:len(t.buf)+m]
				if t.content+n > t.j.opts.MaxBytes {
					if err := t.rewind(frameOff); err != nil {
						return "", 0, err
					}
					if err := t.giveUp(); err != nil {
						return "", 0, err
					}
				} else if len(t.buf) >= flushBytes {
					if err := t.flush(); err != nil {
						return "", 0, err
					}
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			_ = t.rewind(frameOff)
			return "", 0, rerr
		}
	}
	t.content += n
	k := key(sum)
	if t.over {
		return k, n, nil
	}
	var h [32]byte
	copy(h[:], sum.Sum(nil))
	if _, dup := t.j.seg.blobs[h]; dup {
		return k, n, t.rewind(frameOff)
	}
	if _, dup := t.blobs[h]; dup {
		return k, n, t.rewind(frameOff)
	}
	crc = crc32.Update(crc, castagnoli, h[:])
	t.buf = append(t.buf, h[:]...)
	var hdr [headerLen]byte
	putHeader(hdr[:], kindBlob, uint64(n)+32, crc)
	if frameOff >= t.flushed {
		copy(t.buf[frameOff-t.flushed:], hdr[:])
	} else if _, err := t.j.seg.f.WriteAt(hdr[:], frameOff); err != nil {
		return "", 0, t.j.writeErr(err)
	}
	t.blobs[h] = struct{}{}
	t.stored += t.pos() - frameOff
	return k, n, nil
}

// hashOnly hashes what r yields into sum, checking the context between
// chunks; the bytes read.
func (t *Txn) hashOnly(sum hash.Hash, r io.Reader) (int64, error) {
	buf := make([]byte, 64<<10)
	var n int64
	for {
		if err := t.cancelled(); err != nil {
			return n, err
		}
		m, err := r.Read(buf)
		sum.Write(buf[:m])
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// giveUp drops every content this change stored: its prior content passed
// the cap and it will not be kept.
func (t *Txn) giveUp() error {
	t.over = true
	t.stored = 0
	clear(t.blobs)
	return t.rewind(t.start)
}

func key(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

// Commit appends the entry, Pending, after its contents, releases the
// append lock, and with Options.Sync waits for one fdatasync of the
// segment: once it returns nil the entry survives a crash and the change
// may publish. The entry returned has its ID, Time, Before, Kept, NotKept
// and Bytes set. After a failure nothing the Txn wrote remains (when the
// sync failed, the entry is there but marked Failed as far as possible).
// Errors are *Error with CodeFailed.
func (t *Txn) Commit() (Entry, error) {
	e, s, err := t.Stage()
	if err != nil {
		return Entry{}, err
	}
	if err := s.Wait(); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// Stage is Commit without the sync: it appends the entry and releases the
// append lock, and returns the entry's Sync, whose Wait the change must
// see return nil before it publishes. Start begins the sync in the
// background: a write starts it right before it fsyncs its own temp file,
// so the two reach the disk together. Errors are Commit's.
func (t *Txn) Stage() (Entry, *Sync, error) {
	if t.done {
		return Entry{}, nil, newErr(CodeFailed, "record", nil, "the change %s was already committed or aborted", t.e.ID)
	}
	t.done = true
	j := t.j
	t.e.Kept = !t.over
	t.e.NotKept = ""
	if t.over {
		t.e.NotKept = fmt.Sprintf("%d bytes, over the journal cap of %d", t.content, j.opts.MaxBytes)
	}
	t.e.Bytes = t.stored
	seg := j.seg
	if j.opts.Sync {
		// Taken before the entry is written: the segment's descriptor
		// and the segment itself outlive a roll or an eviction until
		// the Sync is done.
		if err := seg.hold(); err != nil {
			t.abortLocked()
			return Entry{}, nil, newErr(CodeFailed, "record", err, "cannot lock the journal segment %s", filepath.Join(j.opts.Dir, segName(seg.num)))
		}
	}
	payload, err := json.Marshal(t.e)
	if err == nil {
		t.buf = appendFrame(t.buf, kindEntry, payload)
		err = t.flush()
	} else {
		err = newErr(CodeFailed, "record", err, "cannot encode the entry")
	}
	if err != nil {
		if j.opts.Sync {
			seg.release()
		}
		t.abortLocked()
		return Entry{}, nil, err
	}
	seg.end = t.flushed
	for h := range t.blobs {
		seg.blobs[h] = struct{}{}
	}
	s := &Sync{j: j, seg: seg, id: t.e.ID, done: make(chan error, 1)}
	j.funlock()
	j.mu.Unlock()
	return t.e, s, nil
}

// Sync is the durability of one staged entry: one fdatasync of its
// segment with Options.Sync, nothing without. Its methods are safe for
// concurrent use. Until Wait is called (or the sync Start began is done)
// the Sync keeps its segment's descriptor open and the segment from being
// dropped: call Wait on every Sync, even for a change that will not
// publish.
type Sync struct {
	j       *Journal
	seg     *segment
	id      string
	start   sync.Once
	wait    sync.Once
	done    chan error
	outcome error
}

// Start begins the sync in the background (once; outside the append
// lock, so concurrent changes share their syncs).
func (s *Sync) Start() {
	s.start.Do(func() {
		if !s.j.opts.Sync {
			s.done <- nil
			return
		}
		go func() {
			err := fdatasync(s.seg.f)
			s.seg.release()
			if err != nil {
				_ = s.j.Finish(s.id, Failed, nil)
				err = newErr(CodeFailed, "record", err, "cannot sync the journal segment %s", filepath.Join(s.j.opts.Dir, segName(s.seg.num)))
			}
			s.done <- err
		}()
	})
}

// Wait starts the sync if it has not started and returns its outcome:
// nil once the entry is durable (the same outcome on every call).
func (s *Sync) Wait() error {
	s.Start()
	s.wait.Do(func() { s.outcome = <-s.done })
	return s.outcome
}

// Abort drops everything the Txn wrote and releases the append lock; after
// Commit it does nothing.
func (t *Txn) Abort() {
	if t.done {
		return
	}
	t.done = true
	t.abortLocked()
}

func (t *Txn) abortLocked() {
	_ = t.rewind(t.start)
	t.j.funlock()
	t.j.mu.Unlock()
}

// fdatasync syncs f's data (and the size that reaches it). The caller
// keeps f open meanwhile (a segment's Sync holds it).
func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = dirfd.Datasync(int(fd))
			if !errors.Is(serr, unix.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}

// Finish appends the outcome of the entry id: Applied (the change
// published) or Failed (it did not), and after, the state the change left
// when known better now than at Begin (nil keeps the entry's After). It is
// not synced: a crash before it leaves the entry Pending, and the disk says
// which side the change is on. Errors are *Error with CodeFailed.
func (j *Journal) Finish(id string, status Status, after []Node) error {
	payload, err := json.Marshal(outcome{ID: id, Status: status, After: after})
	if err != nil {
		return newErr(CodeFailed, "record", err, "cannot encode the outcome")
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.open(); err != nil {
		return err
	}
	if err := j.flock(); err != nil {
		return err
	}
	defer j.funlock()
	if err := j.current(""); err != nil {
		return err
	}
	return j.appendLocked(appendFrame(nil, kindOutcome, payload))
}
