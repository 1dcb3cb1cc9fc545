package audit

import (
	"errors"
	"fmt"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// run is the writer goroutine: it takes the records queued at the time,
// up to a batch (maxBatch, and no more than MaxBytes so a batch fits a
// fresh file), writes them in one write(2) and syncs them with one
// fdatasync, until Close closes the queue and it is drained. It first
// syncs the log's directory (the file's name, made by OpenLog), before any
// record: off the server's start, whose first answer need not wait for
// the disk.
func (l *Log) run() {
	defer close(l.done)
	syncDir(l.opts.Path)
	limit := min(maxBatch, l.opts.MaxBytes)
	var (
		buf  []byte
		next *line // taken from the queue, did not fit the last batch
		open = true
	)
	for open || next != nil {
		if next == nil {
			r, ok := <-l.queue
			if !ok {
				return
			}
			next = l.encode(r)
		}
		buf = buf[:0]
		if l.torn {
			// The last write stopped mid-line: end that fragment so it
			// stays one unreadable line instead of spoiling this record.
			buf = append(buf, '\n')
		}
		buf = append(buf, next.b...)
		n, carried := int64(1), next.lost
		next = nil
	drain:
		for open {
			select {
			case r, ok := <-l.queue:
				if !ok {
					open = false
					break drain
				}
				ln := l.encode(r)
				if int64(len(buf)+len(ln.b)) > limit {
					next = ln
					break drain
				}
				buf = append(buf, ln.b...)
				n, carried = n+1, carried+ln.lost
			default:
				break drain
			}
		}
		l.write(buf, n, carried)
	}
}

// line is one encoded record and the count of lost records it carries.
type line struct {
	b    []byte
	lost int64
}

// encode returns the line of it, carrying the count of the records lost before
// it (then encoded again with Lost set).
func (l *Log) encode(it item) *line {
	lost := l.lost.Swap(0)
	if lost == 0 {
		return &line{b: it.b}
	}
	it.r.Lost += lost
	return &line{b: EncodeBounded(it.r), lost: lost}
}

// write appends buf (n records, carrying the count of carried earlier
// losses) and syncs it. On failure the n records and the carried count are
// lost again, to be carried by the next batch.
func (l *Log) write(buf []byte, n, carried int64) {
	err := l.prepare(int64(len(buf)))
	if err != nil && !l.stuck {
		// Rotation failed: keep appending to the file we have (it grows
		// past MaxBytes) rather than lose records; say so once.
		l.opts.Log.Error("audit log: rotation failed", zap.String("path", l.opts.Path), zap.Error(err))
	}
	l.stuck = err != nil
	w, err := l.f.Write(buf)
	if err == nil {
		err = l.sync()
	}
	if err != nil {
		l.torn = w > 0 && w < len(buf)
		l.err = fmt.Errorf("audit log: %w", err)
		l.lose(n, carried, err)
		return
	}
	l.torn, l.err = false, nil
	l.totalWritten.Add(n)
	l.written(carried)
}

// sync makes what was written durable. A file that cannot be synced (a
// pipe, a terminal: EINVAL) has nothing to make durable.
func (l *Log) sync() error {
	for {
		err := dirfd.Datasync(int(l.f.Fd()))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EINVAL):
			return nil
		default:
			return err
		}
	}
}
