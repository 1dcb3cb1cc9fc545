package execsandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/dsh-go/harness/internal/cgroup"
	"github.com/dsh-go/harness/internal/subproc"
)

// limiter applies a command's memory and process caps: a cgroup of its own
// where the server may create one (root with the memory and pids
// controllers, or a delegated cgroup v2 subtree), else rlimits in the inner
// stage. The cgroup manager is opened once, at the first command.
type limiter struct {
	manager func() (*cgroup.Manager, error)
	// spare is a group made ahead for the next command, with the caps it
	// was made with, so making one is off the command's path.
	mu    sync.Mutex
	spare *cgroup.Group
	caps  cgroup.Limits
}

func newLimiter() *limiter {
	return &limiter{manager: sync.OnceValues(cgroup.Open)}
}

// group returns a group with limits l: the spare one when it has them,
// else a new one; then makes the next spare in the background.
func (l *limiter) group(m *cgroup.Manager, lim cgroup.Limits) (*cgroup.Group, error) {
	l.mu.Lock()
	g := l.spare
	if g != nil && l.caps != lim {
		go func(g *cgroup.Group) { _ = g.Delete() }(g)
		g = nil
	}
	l.spare = nil
	l.mu.Unlock()
	if g == nil {
		var err error
		if g, err = m.New(l.name(), lim); err != nil {
			return nil, err
		}
	}
	go func() {
		next, err := m.New(l.name(), lim)
		if err != nil {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.spare != nil {
			go func() { _ = next.Delete() }()
			return
		}
		l.spare, l.caps = next, lim
	}()
	return g, nil
}

// commandGroups numbers the command groups of this process: the runners of
// one process share its parent group (cgroup.Open), so a number per runner
// would give two runners' groups one name, and the second runner's
// commands would go without their cgroup.
var commandGroups atomic.Uint64

func (l *limiter) name() string { return "cmd-" + strconv.FormatUint(commandGroups.Add(1), 10) }

// caps are one command's limits as applied: the rlimits for the stage, and
// when a cgroup carries them, the hook that places the sandbox in it and the
// cleanup that removes it.
type caps struct {
	rlimits subproc.RLimits
	placed  func(pid int) error
	done    func()
}

// forCommand returns how cfg's caps apply to the next command. A cgroup
// that cannot be made falls back to rlimits; a cgroup that cannot take the
// sandbox stops the command (see subproc.RunBwrap's placed).
func (l *limiter) forCommand(cfg Config) caps {
	rl := rlimits(cfg)
	m, err := l.manager()
	if err != nil || (rl.Data == 0 && rl.Procs == 0) {
		return caps{rlimits: rl, done: func() {}}
	}
	g, err := l.group(m, cgroup.Limits{MemoryBytes: int64(rl.Data), Pids: int64(rl.Procs)})
	if err != nil {
		return caps{rlimits: rl, done: func() {}}
	}
	return caps{
		// The rlimits stay as a second layer beneath the group.
		rlimits: rl,
		placed: func(pid int) error {
			// The init first: what it forks from now on is born in the
			// group; then, read only after that, what it forked already
			// (the stage, waiting for its spec).
			if err := g.Add(pid); err != nil {
				return fmt.Errorf("cannot place the command in its cgroup: %w", err)
			}
			for _, c := range childrenOf(pid) {
				if err := g.Add(c); err != nil && !errors.Is(err, syscall.ESRCH) {
					return fmt.Errorf("cannot place the command in its cgroup: %w", err)
				}
			}
			return nil
		},
		// Every process of the group has ended with the sandbox's PID
		// namespace: removing the group needs no waiting by the caller.
		done: func() { go func() { _ = g.Delete() }() },
	}
}

// close closes the cgroup manager when one was opened (its Close deletes
// the groups still open, the spare among them).
func (l *limiter) close() error {
	if m, err := l.manager(); err == nil {
		return m.Close()
	}
	return nil
}

// describe says how the caps of cfg apply here, for `harness policy`.
func (l *limiter) describe(cfg Config) string {
	rl := rlimits(cfg)
	if m, err := l.manager(); err == nil && (rl.Data > 0 || rl.Procs > 0) {
		mem, procs := "no memory cap", "no process cap"
		if rl.Data > 0 {
			mem = fmt.Sprintf("memory %d MiB for the whole command", rl.Data>>20)
		}
		if rl.Procs > 0 {
			procs = fmt.Sprintf("%d processes and threads", rl.Procs)
		}
		return mem + ", " + procs + " (" + m.Kind() + ", a group per command)"
	} else if err != nil && (rl.Data > 0 || rl.Procs > 0) {
		return describeLimits(rl) + " (rlimits: this server may not create cgroups)"
	}
	return describeLimits(rl)
}

// childrenOf returns the pids of pid's children, read from
// /proc/PID/task/*/children.
func childrenOf(pid int) []int {
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for f := range strings.FieldsSeq(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}
