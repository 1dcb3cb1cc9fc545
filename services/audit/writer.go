package audit

import (
	"errors"
	"fmt"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// run is the writer goroutine: it takes every record queued at the time,
// writes them in one write(2) and syncs them with one fdatasync, until
// Close closes the queue and it is drained.
func (l *Log) run() {
	defer close(l.done)
	var buf []byte
	for r := range l.queue {
		buf = buf[:0]
		if l.torn {
			// The last write stopped mid-line: end that fragment so it
			// stays one unreadable line instead of spoiling this record.
			buf = append(buf, '\n')
		}
		carried := l.lost.Swap(0)
		r.Lost += carried
		buf = append(buf, marshal(r)...)
		n := int64(1)
	drain:
		for len(buf) < maxBatch {
			select {
			case r, ok := <-l.queue:
				if !ok {
					break drain
				}
				buf = append(buf, marshal(r)...)
				n++
			default:
				break drain
			}
		}
		l.write(buf, n, carried)
	}
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
		l.lose(n+carried, err)
		return
	}
	l.torn = false
	if carried > 0 {
		l.episode.Store(false)
		l.opts.Log.Info("audit log: writing again", zap.String("path", l.opts.Path), zap.Int64("lost", carried))
		_, _ = fmt.Fprintf(l.opts.Stderr, "harness: audit log %s: writing again; %d records were lost\n", l.opts.Path, carried)
	}
}

// sync makes what was written durable. A file that cannot be synced (a
// pipe, a terminal: EINVAL) has nothing to make durable.
func (l *Log) sync() error {
	for {
		err := unix.Fdatasync(int(l.f.Fd()))
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
