package execsandbox

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dsh-go/harness/internal/cgroup"
	"github.com/dsh-go/harness/internal/subproc"
)

// limiter applies a command's memory and process caps: a cgroup of its own
// where the server may create one (root with the memory and pids
// controllers, or a delegated cgroup v2 subtree), else rlimits in the inner
// stage. The cgroup manager is opened once, at the first command.
type limiter struct {
	manager func() (*cgroup.Manager, error)
	next    atomic.Uint64
}

func newLimiter() *limiter {
	return &limiter{manager: sync.OnceValues(cgroup.Open)}
}

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
	g, err := m.New("cmd-"+strconv.FormatUint(l.next.Add(1), 10), cgroup.Limits{MemoryBytes: int64(rl.Data), Pids: int64(rl.Procs)})
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
				if err := g.Add(c); err != nil {
					return fmt.Errorf("cannot place the command in its cgroup: %w", err)
				}
			}
			return nil
		},
		done: func() { _ = g.Delete() },
	}
}

// close closes the cgroup manager when one was opened.
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
