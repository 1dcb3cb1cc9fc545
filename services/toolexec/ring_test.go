package toolexec

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRing: a reader gets exactly the bytes written since its last read, in
// order, and when more than the limit came in between, the last limit bytes
// and the count of those dropped.
func TestRing(t *testing.T) {
	type read struct {
		data    string
		dropped int64
	}
	cases := []struct {
		name  string
		limit int
		steps []string // a write, or "<" for a read
		reads []read
	}{
		{"nothing written reads empty", 4, []string{"<"}, []read{{"", 0}}},
		{"reads are incremental", 8, []string{"ab", "<", "cd", "e", "<", "<"}, []read{{"ab", 0}, {"cde", 0}, {"", 0}}},
		{"exactly the limit drops nothing", 4, []string{"abcd", "<"}, []read{{"abcd", 0}}},
		{"overflow keeps the tail and counts the rest", 4, []string{"abcdef", "<"}, []read{{"cdef", 2}}},
		{"overflow across writes wraps in order", 4, []string{"abc", "<", "defgh", "<", "ij", "<"}, []read{{"abc", 0}, {"efgh", 1}, {"ij", 0}}},
		{"many small writes wrap", 3, []string{"a", "b", "c", "d", "e", "<", "f", "<"}, []read{{"cde", 2}, {"f", 0}}},
		{"one write larger than the limit", 2, []string{"x", "<", "0123456789", "<"}, []read{{"x", 0}, {"89", 8}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRing(tc.limit)
			var got []read
			for _, s := range tc.steps {
				if s == "<" {
					d, n := r.next()
					got = append(got, read{string(d), n})
					continue
				}
				n, err := r.Write([]byte(s))
				assert.NoError(t, err)
				assert.Equal(t, len(s), n)
			}
			assert.Equal(t, tc.reads, got)
			assert.LessOrEqual(t, len(r.buf), tc.limit, "never more than the limit kept")
		})
	}
	big := newRing(1 << 10)
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<8) // 4 KiB
	_, _ = big.Write(payload)
	d, dropped := big.next()
	assert.Equal(t, payload[len(payload)-1<<10:], d)
	assert.Equal(t, int64(len(payload)-1<<10), dropped)
}

// TestRingTail: tail gives the last bytes written whether read or not, in
// order across the wrap; shrink keeps only the last n of them, and a read
// after it gets nothing already read.
func TestRingTail(t *testing.T) {
	cases := []struct {
		name, writes string
		limit, n     int
		want         string
	}{
		{"fewer than n", "ab", 8, 4, "ab"},
		{"the last n", "abcdef", 8, 4, "cdef"},
		{"across the wrap", "abcdefghij", 6, 4, "ghij"},
		{"n past the kept bytes", "abcdefghij", 6, 9, "efghij"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRing(c.limit)
			_, _ = r.Write([]byte(c.writes))
			assert.Equal(t, c.want, string(r.tail(c.n)))
			data, _ := r.next()
			assert.Equal(t, c.writes[max(0, len(c.writes)-c.limit):], string(data))
			assert.Equal(t, c.want, string(r.tail(c.n)), "a read leaves the tail")
			r.shrink(c.n)
			assert.Equal(t, c.want, string(r.tail(c.n)))
			assert.LessOrEqual(t, len(r.buf), c.n)
			data, dropped := r.next()
			assert.Empty(t, data)
			assert.Zero(t, dropped)
		})
	}
}
