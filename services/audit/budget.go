package audit

import (
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-go/harness/services/errcode"
)

// CodeSessionBudget is the code of a call refused because its session has
// written its share of the audit log (Log.Admit).
const CodeSessionBudget errcode.Code = "AUDIT_SESSION_BUDGET"

// Admitter is a Sink that may refuse a session's calls before they run: the
// guard asks it before each call and refuses the call with its error.
type Admitter interface {
	// Admit returns nil when a call opened as r (its Time, Session, Tool,
	// Call, ...) may run, else a *BudgetError.
	Admit(r Record) error
}

// BudgetError is the refusal of a call whose session has written Used
// bytes of records, at least its Budget.
type BudgetError struct {
	Session string
	Used    int64
	Budget  int64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("this session has written %d bytes of audit records, its share of the audit log (%d bytes): no more of its calls run, so that its records cannot rotate earlier ones out of the log; start a new session, or ask the user to raise --audit-max-bytes", e.Used, e.Budget)
}

// budgets is the log's account of what each session wrote.
type budgets struct {
	mu   sync.Mutex
	used map[string]*use
}

// use is one session's account: the bytes of its records queued, and
// whether its first refused call was recorded.
type use struct {
	bytes   int64
	refused bool
}

// charge counts n bytes of a record of session. A record the server
// refused before its tool ran (Decision Refused: nothing ran) of a session
// past its budget is not charged and reports false: it is not written, so
// that calls refused for load cannot flood the log either.
func (l *Log) charge(r Record, n int64) bool {
	l.budgets.mu.Lock()
	defer l.budgets.mu.Unlock()
	u := l.budgets.used[r.Session]
	if u == nil {
		u = &use{}
		l.budgets.used[r.Session] = u
	}
	if r.Decision == Refused && u.bytes >= l.opts.SessionBudget {
		return false
	}
	u.bytes += n
	return true
}

// AdmitBy is s's Admit when s is an Admitter (nil otherwise): what a Sink
// that wraps another (the metrics', the OTLP export's) answers, so the
// guard's check reaches the audit log through it.
func AdmitBy(s Sink, r Record) error {
	if a, ok := s.(Admitter); ok {
		return a.Admit(r)
	}
	return nil
}

// Admit reports whether a call of r.Session may run: nil while the session
// has written less than LogOptions.SessionBudget bytes of records, else a
// *BudgetError. The first refusal of a session is itself recorded (once,
// past the budget: decision refused, code AUDIT_SESSION_BUDGET) and
// reported at error level and on Stderr; later ones are not written.
func (l *Log) Admit(r Record) error {
	l.budgets.mu.Lock()
	u := l.budgets.used[r.Session]
	if u == nil || u.bytes < l.opts.SessionBudget {
		l.budgets.mu.Unlock()
		return nil
	}
	err := &BudgetError{Session: r.Session, Used: u.bytes, Budget: l.opts.SessionBudget}
	first := !u.refused
	u.refused = true
	l.budgets.mu.Unlock()
	if first {
		l.opts.Log.Error("audit log: a session wrote its share; its calls are refused", zap.String("path", l.opts.Path), zap.String("session", r.Session), zap.Int64("bytes", err.Used), zap.Int64("budget", err.Budget))
		_, _ = fmt.Fprintf(l.opts.Stderr, "harness: audit log %s: session %q wrote %d bytes of records, its share (%d); its calls are refused from now on\n", l.opts.Path, r.Session, err.Used, err.Budget)
		rec := Record{Time: r.Time, Session: r.Session, Client: r.Client, Principal: r.Principal, Tool: r.Tool, Call: r.Call, Decision: Refused, Outcome: Error, Code: string(CodeSessionBudget)}
		if rec.Time.IsZero() {
			rec.Time = time.Now().UTC()
		}
		l.queueLine(rec, EncodeBounded(rec))
	}
	return err
}

var _ Admitter = (*Log)(nil)
