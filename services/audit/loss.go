package audit

import (
	"fmt"
	"sync"

	"go.uber.org/zap"
)

// episode is the log's account of lost records. An episode starts with
// the first record lost after the log was writing (reported once) and ends
// when every record lost in it has been counted by a record written
// (reported once, with the total).
type episode struct {
	mu     sync.Mutex
	active bool
	open   int64 // lost in this episode and not yet carried by a written record
	total  int64 // lost in this episode
}

// lose counts n records lost for cause, and puts back carry, the counts a
// failed batch carried, to be carried again; the first loss of an episode
// is reported at error level and on stderr.
func (l *Log) lose(n, carry int64, cause error) {
	l.loss.mu.Lock()
	defer l.loss.mu.Unlock()
	l.lost.Add(n + carry)
	l.totalLost.Add(n)
	l.loss.open += n
	l.loss.total += n
	if l.loss.active {
		return
	}
	l.loss.active = true
	l.opts.Log.Error("audit log: records lost", zap.String("path", l.opts.Path), zap.Error(cause))
	_, _ = fmt.Fprintf(l.opts.Stderr, "harness: audit log %s: records lost: %v (counted; the next record written says how many)\n", l.opts.Path, cause)
}

// written notes that a batch carrying the counts of carried lost records
// reached the disk; the episode ends when nothing lost is left uncounted.
func (l *Log) written(carried int64) {
	if carried == 0 {
		return
	}
	l.loss.mu.Lock()
	defer l.loss.mu.Unlock()
	l.loss.open -= carried
	if !l.loss.active || l.loss.open > 0 {
		return
	}
	l.loss.active = false
	l.opts.Log.Warn("audit log: writing again", zap.String("path", l.opts.Path), zap.Int64("lost", l.loss.total))
	_, _ = fmt.Fprintf(l.opts.Stderr, "harness: audit log %s: writing again; %d records were lost\n", l.opts.Path, l.loss.total)
	l.loss.total = 0
}
