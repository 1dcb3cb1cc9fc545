package execsandbox

import (
	"fmt"
	"os"
	"sync"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/session"
)

// nsenterRemedy is what a user does when nsenter is missing or unusable.
const nsenterRemedy = "install util-linux's nsenter (Debian and Ubuntu: the essential util-linux package; other distributions ship it under the same name)"

// sessionNets holds one loopback-only network namespace (subproc.NetNS) per
// live session and user under network deny, so the commands of a session
// reach each other's 127.0.0.1 servers while those of different sessions
// never do. A namespace is made at the session's first confined command
// and let go when the session ends (session.Session.Done) or the runner
// closes; the kernel ends it once its last command has ended too. Nothing
// can end it while it is held (no process holds it), so there is no dead
// holder to detect: a command that comes after its session ended is
// refused, never given a fresh namespace the session would not let go.
//
// A session whose commands run as two users (its workspace root changed
// owner under a root server) gets one namespace per user: a namespace
// maps only the user it was made for. A session not started by a
// session.Tracker never ends: its namespace lives until the runner closes.
type sessionNets struct {
	// enter is nsenter, found and opened once.
	enter func() (*subproc.Program, error)

	mu      sync.Mutex // guards nets and stopped
	nets    map[netKey]*sessionNet
	stopped bool
	stop    chan struct{}
	ended   sync.WaitGroup // the goroutines letting namespaces go
}

// netKey is one session's namespace for one user.
type netKey struct {
	s        *session.Session
	uid, gid uint32
}

// sessionNet is the namespace of one key, made once.
type sessionNet struct {
	mu sync.Mutex // held while it is made
	ns *subproc.NetNS
}

func newSessionNets(roots func() []string) *sessionNets {
	return &sessionNets{
		enter: sync.OnceValues(func() (*subproc.Program, error) {
			return findProgram("nsenter", "nsenter", os.Getenv("PATH"), roots())
		}),
		nets: map[netKey]*sessionNet{},
		stop: make(chan struct{}),
	}
}

// join returns the namespace of s for b.Credential, making it with b when
// it has none yet. Errors (exec.CodeUnavailable, the command must not run):
// s has ended; the runner is closed; nsenter is missing or unusable, or the
// namespace could not be made.
func (n *sessionNets) join(s *session.Session, b subproc.Bwrap) (*subproc.NetNS, error) {
	select {
	case <-s.Done():
		return nil, sessionEnded()
	default:
	}
	k := netKey{s: s, uid: uint32(os.Geteuid()), gid: uint32(os.Getegid())}
	if b.Credential != nil {
		k.uid, k.gid = b.Credential.Uid, b.Credential.Gid
	}
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		return nil, closedRunner()
	}
	e := n.nets[k]
	if e == nil {
		e = &sessionNet{}
		n.nets[k] = e
	}
	n.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ns != nil {
		return e.ns, nil
	}
	enter, err := n.enter()
	if err == nil {
		e.ns, err = subproc.NewNetNS(b, enter)
	}
	if err != nil {
		// Nothing kept: the next command tries again.
		n.forget(k, e)
		return nil, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
			"the session's network namespace could not be made: %v; the command was not run. Remedy: %s", err, nsenterRemedy)}
	}
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		_ = e.ns.Close()
		n.forget(k, e)
		return nil, closedRunner()
	}
	// Added under mu while not stopped, so before close waits.
	n.ended.Add(1)
	n.mu.Unlock()
	go func() {
		defer n.ended.Done()
		select {
		case <-s.Done():
		case <-n.stop:
		}
		n.forget(k, e)
		_ = e.ns.Close()
	}()
	return e.ns, nil
}

// forget removes e, when it is still the entry of k.
func (n *sessionNets) forget(k netKey, e *sessionNet) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nets[k] == e {
		delete(n.nets, k)
	}
}

// close lets every namespace go, and returns once they are; later joins
// are refused.
func (n *sessionNets) close() {
	n.mu.Lock()
	if !n.stopped {
		n.stopped = true
		close(n.stop)
	}
	n.mu.Unlock()
	n.ended.Wait()
}

// sessionEnded refuses a command whose session has ended (a call racing
// its connection's end): its namespace is gone, and a new one would
// outlive it.
func sessionEnded() error {
	return &exec.Error{Code: exec.CodeUnavailable, Message: "the session has ended; the command was not run"}
}

// closedRunner refuses a command that comes after the runner closed.
func closedRunner() error {
	return &exec.Error{Code: exec.CodeUnavailable, Message: "the command runner has closed; the command was not run"}
}
