package toolexec

import "sync"

// ring keeps the last limit bytes written to one stream of a background
// command, and how far its reader has read: a reader gets what was written
// since its last read, and how many bytes of that were overwritten before
// it came. It is safe for concurrent use.
type ring struct {
	limit int

	mu    sync.Mutex
	buf   []byte // grows to limit, then circular with the oldest at start
	start int
	total int64 // bytes ever written
	read  int64 // stream offset the reader has read up to
}

func newRing(limit int) *ring { return &ring{limit: max(limit, 1)} }

// Write keeps p, dropping the oldest bytes beyond the limit. It never
// fails.
func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(p)
	r.total += int64(n)
	if len(p) > r.limit {
		p = p[len(p)-r.limit:]
	}
	for len(p) > 0 {
		if len(r.buf) < r.limit {
			k := min(r.limit-len(r.buf), len(p))
			r.buf = append(r.buf, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(r.buf[r.start:], p)
		r.start = (r.start + k) % r.limit
		p = p[k:]
	}
	return n, nil
}

// next returns the bytes written since the previous next (the oldest
// first) and how many bytes written since then were dropped before this
// read, and moves the reader to the end of the stream.
func (r *ring) next() (data []byte, dropped int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	from := max(r.read, r.total-int64(len(r.buf)))
	dropped = from - r.read
	count := int(r.total - from)
	r.read = r.total
	data = make([]byte, 0, count)
	data = append(data, r.buf[r.start:]...)
	data = append(data, r.buf[:r.start]...)
	return data[len(data)-count:], dropped
}

// tail returns the last n bytes written (fewer when fewer are kept),
// whether read or not.
func (r *ring) tail(n int) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	data := make([]byte, 0, len(r.buf))
	data = append(data, r.buf[r.start:]...)
	data = append(data, r.buf[:r.start]...)
	return data[len(data)-min(n, len(data)):]
}

// shrink keeps only the last n bytes written and what of them is unread,
// for a stream that will not be written again (its command ended).
func (r *ring) shrink(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) <= n {
		return
	}
	data := make([]byte, 0, len(r.buf))
	data = append(data, r.buf[r.start:]...)
	data = append(data, r.buf[:r.start]...)
	r.buf, r.start, r.limit = append([]byte(nil), data[len(data)-n:]...), 0, n
}

// written returns how many bytes were ever written.
func (r *ring) written() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}
