package toolexec

import (
	"strconv"
	"sync"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/exec"
)

// CodePrincipalLimit is the code of a command refused because it would pass one of its principal's caps in
// all (Config.PrincipalMaxBackground, PrincipalMemory, PrincipalPids); the
// message names the cap and the flag that raises it. Nothing ran.
const CodePrincipalLimit errcode.Code = "EXEC_PRINCIPAL_LIMIT"

// budgets count what each principal's running commands reserve: its
// background commands, and the memory and process caps of all its
// commands, foreground and background, against Config's caps in all.
type budgets struct {
	cfg       Config
	mem, pids int64 // one command's caps (exec.Capped), 0 for none

	mu  sync.Mutex
	use map[string]*usage // principal name -> what its running commands reserve
}

// usage is what one principal's running commands reserve.
type usage struct {
	background  int
	memory, pid int64
}

func newBudgets(cfg Config, r exec.Runner) *budgets {
	b := &budgets{cfg: cfg, use: map[string]*usage{}}
	if c, ok := r.(exec.Capped); ok {
		b.mem, b.pids = c.Caps()
	}
	return b
}

// take reserves one command of principal (a background one when
// background) and returns the func that gives it back when the command
// ends. Errors: *principalLimitError (CodePrincipalLimit) naming the cap the
// command would pass; nothing is reserved then.
func (b *budgets) take(principal string, background bool) (func(), error) {
	if b.cfg.PrincipalMaxBackground <= 0 && b.cfg.PrincipalMemory <= 0 && b.cfg.PrincipalPids <= 0 {
		return func() {}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.use[principal]
	if u == nil {
		u = &usage{}
	}
	who := "principal " + strconv.Quote(principal)
	switch {
	case background && b.cfg.PrincipalMaxBackground > 0 && u.background >= b.cfg.PrincipalMaxBackground:
		return nil, &principalLimitError{who + " already runs " + strconv.Itoa(u.background) + " background commands over its sessions, its cap (--principal-max-background " +
			strconv.Itoa(b.cfg.PrincipalMaxBackground) + "); end one with exec_kill, or have the server's operator raise --principal-max-background"}
	case b.cfg.PrincipalMemory > 0 && b.mem > 0 && u.memory+b.mem > b.cfg.PrincipalMemory:
		return nil, &principalLimitError{who + "'s running commands may take " + strconv.FormatInt(u.memory>>20, 10) + " MiB of memory in all (each its --exec-memory cap of " +
			strconv.FormatInt(b.mem>>20, 10) + " MiB); one more would pass its cap of " + strconv.FormatInt(b.cfg.PrincipalMemory>>20, 10) +
			" MiB (--principal-exec-memory); wait for one to end or end a background one with exec_kill, or have the server's operator raise --principal-exec-memory"}
	case b.cfg.PrincipalPids > 0 && b.pids > 0 && u.pid+b.pids > b.cfg.PrincipalPids:
		return nil, &principalLimitError{who + "'s running commands may run " + strconv.FormatInt(u.pid, 10) + " processes in all (each its --exec-pids cap of " +
			strconv.FormatInt(b.pids, 10) + "); one more would pass its cap of " + strconv.FormatInt(b.cfg.PrincipalPids, 10) +
			" (--principal-exec-pids); wait for one to end or end a background one with exec_kill, or have the server's operator raise --principal-exec-pids"}
	}
	b.use[principal] = u
	if background {
		u.background++
	}
	u.memory += b.mem
	u.pid += b.pids
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if background {
				u.background--
			}
			u.memory -= b.mem
			u.pid -= b.pids
			if u.background == 0 && u.memory == 0 && u.pid == 0 {
				delete(b.use, principal)
			}
		})
	}, nil
}

// principalLimitError refuses a command (CodePrincipalLimit).
type principalLimitError struct{ msg string }

func (e *principalLimitError) Error() string { return e.msg }
