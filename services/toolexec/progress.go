package toolexec

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/dsh-go/harness/services/tool"
)

// Pacing of exec's progress reports.
const (
	// ProgressEvery is how often a call of exec whose client asked for
	// progress reports it while it waits and runs: well inside the 60 s
	// request timeout of common clients, which reset it on each report.
	ProgressEvery = 5 * time.Second
	// progressTail is how many of the last bytes of output a report's
	// message shows: enough for the last line or two.
	progressTail = 400
)

// tail is an io.Writer keeping the last progressTail bytes written to it
// (both streams of one command). It is safe for concurrent use.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - progressTail; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns the kept bytes from their first whole line when a line
// ends in them, valid UTF-8.
func (t *tail) String() string {
	t.mu.Lock()
	s := string(t.buf)
	t.mu.Unlock()
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:] // a rune cut at the front
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// reporter sends a running call's progress every ProgressEvery: done is the
// seconds since the call began, the message says whether the command waits
// for a slot (and how many of its principal's wait) or runs, and the last
// output.
type reporter struct {
	progress tool.Progress
	waiting  func() int // the principal's commands waiting for a slot
	began    time.Time
	out      tail
	running  atomic.Bool
	quit     chan struct{}
	stopped  chan struct{}
}

// report starts reporting to p; waiting counts the commands of the call's
// principal that wait for a slot. Its stop must be called before the call
// returns. Nil p reports nothing (stop is still safe).
func report(p tool.Progress, waiting func() int) *reporter {
	r := &reporter{progress: p, waiting: waiting, began: time.Now(), quit: make(chan struct{}), stopped: make(chan struct{})}
	if p == nil {
		close(r.stopped)
		return r
	}
	go r.loop()
	return r
}

func (r *reporter) loop() {
	defer close(r.stopped)
	tick := time.NewTicker(ProgressEvery)
	defer tick.Stop()
	for {
		select {
		case <-r.quit:
			return
		case now := <-tick.C:
			secs := now.Sub(r.began).Truncate(time.Second)
			r.progress(secs.Seconds(), 0, r.message(secs))
		}
	}
}

// message is one report's text.
func (r *reporter) message(elapsed time.Duration) string {
	if !r.running.Load() {
		return "waiting for a free command slot (" + elapsed.String() + "; " + strconv.Itoa(r.waiting()) + " of this principal's commands waiting)"
	}
	msg := "running for " + elapsed.String()
	if out := r.out.String(); out != "" {
		msg += "; output so far ends with:\n" + out
	} else {
		msg += "; no output yet"
	}
	return msg
}

// stop ends the reports; none is sent after it returns.
func (r *reporter) stop() {
	select {
	case <-r.quit:
	default:
		close(r.quit)
	}
	<-r.stopped
}
