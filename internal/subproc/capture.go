package subproc

import (
	"strconv"
	"sync"
)

// Capture is an io.Writer that keeps the first and the last bytes written
// to it, up to Limit/2 each, and counts the rest. It is safe for concurrent
// use.
type Capture struct {
	limit int

	mu    sync.Mutex
	head  []byte
	tail  []byte // ring of at most limit-limit/2 bytes, oldest at pos
	pos   int
	total int64
}

// NewCapture returns a Capture keeping at most limit bytes (limit >= 2).
func NewCapture(limit int) *Capture {
	return &Capture{limit: max(limit, 2)}
}

// Write keeps p's bytes in the head until it is full, then in the tail
// ring. It never fails.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	headMax := c.limit / 2
	if room := headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	tailMax := c.limit - headMax
	if len(p) >= tailMax {
		c.tail = append(c.tail[:0], p[len(p)-tailMax:]...)
		c.pos = 0
		return n, nil
	}
	for _, b := range p {
		if len(c.tail) < tailMax {
			c.tail = append(c.tail, b)
			continue
		}
		c.tail[c.pos] = b
		c.pos = (c.pos + 1) % tailMax
	}
	return n, nil
}

// Total returns the number of bytes written.
func (c *Capture) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// String returns what was written when it fits in the limit; else the head,
// a line `[... N bytes cut ...]` naming how many bytes were dropped, and the
// tail.
func (c *Capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := make([]byte, 0, len(c.tail))
	tail = append(tail, c.tail[c.pos:]...)
	tail = append(tail, c.tail[:c.pos]...)
	kept := int64(len(c.head) + len(tail))
	if kept == c.total {
		return string(c.head) + string(tail)
	}
	return string(c.head) + "\n[... " + strconv.FormatInt(c.total-kept, 10) + " bytes cut ...]\n" + string(tail)
}

// Truncated reports whether bytes were dropped.
func (c *Capture) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int64(len(c.head)+len(c.tail)) < c.total
}
