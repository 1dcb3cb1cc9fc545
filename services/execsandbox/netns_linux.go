package execsandbox

import (
	"fmt"
	"os"
	"sync"
	"syscall"

	"go.uber.org/zap"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/netproxy"
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
	// proxy, when set (--allow-domain), serves a gate in each namespace,
	// made with it and closed when it is let go.
	proxy *netproxy.Proxy
	// ownSockets makes each session namespace's socket diagnostics with
	// it (ownBound): its commands make Unix sockets of their own.
	ownSockets bool
	log        *zap.Logger

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

// sessionNet is the namespace of one key, made once, and its gate (nil
// without the proxy).
type sessionNet struct {
	mu   sync.Mutex // held while it is made
	ns   *subproc.NetNS
	gate *gate
	// diag is the namespace's socket diagnostics (made at the first
	// command that asks: ownBound), nil until then; diagMu guards it.
	diagMu sync.Mutex
	diag   *subproc.UnixDiag
	gone   bool // let go: no diag is made any more
}

func newSessionNets(roots func() []string, proxy *netproxy.Proxy, ownSockets bool, log *zap.Logger) *sessionNets {
	if log == nil {
		log = zap.NewNop()
	}
	return &sessionNets{
		proxy: proxy, ownSockets: ownSockets, log: log,
		enter: sync.OnceValues(func() (*subproc.Program, error) {
			return findProgram("nsenter", "nsenter", os.Getenv("PATH"), roots())
		}),
		nets: map[netKey]*sessionNet{},
		stop: make(chan struct{}),
	}
}

// join returns the namespace of s for b.Credential and its gate (nil
// without the proxy), making them with b when it has none yet. Errors
// (exec.CodeUnavailable, the command must not run): s has ended; the
// runner is closed; nsenter is missing or unusable, or the namespace or
// its proxy listener could not be made.
func (n *sessionNets) join(s *session.Session, b subproc.Bwrap) (*subproc.NetNS, *gate, error) {
	select {
	case <-s.Done():
		return nil, nil, sessionEnded()
	default:
	}
	k := netKey{s: s, uid: uint32(os.Geteuid()), gid: uint32(os.Getegid())}
	if b.Credential != nil {
		k.uid, k.gid = b.Credential.Uid, b.Credential.Gid
	}
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		return nil, nil, closedRunner()
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
		return e.ns, e.gate, nil
	}
	var err error
	if e.ns, e.gate, err = n.make(b, s); err != nil {
		// Nothing kept: the next command tries again.
		n.forget(k, e)
		return nil, nil, err
	}
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		e.let()
		n.forget(k, e)
		return nil, nil, closedRunner()
	}
	// Added under mu while not stopped, so before close waits.
	n.ended.Add(1)
	n.mu.Unlock()
	if n.ownSockets {
		// With the namespace, so a session's descriptors all come with
		// its first command; without it nothing is exempt (fail closed).
		e.diagMu.Lock()
		e.diag, _ = e.ns.UnixDiag(b.Stage, b.Credential)
		e.diagMu.Unlock()
	}
	go func() {
		defer n.ended.Done()
		select {
		case <-s.Done():
		case <-n.stop:
		}
		n.forget(k, e)
		e.let()
	}()
	return e.ns, e.gate, nil
}

// make makes a namespace for b and, with the proxy, its gate for s (nil:
// one command's). Errors: exec.CodeUnavailable, naming what failed.
func (n *sessionNets) make(b subproc.Bwrap, s *session.Session) (*subproc.NetNS, *gate, error) {
	enter, err := n.enter()
	var ns *subproc.NetNS
	if err == nil {
		ns, err = subproc.NewNetNS(b, enter)
	}
	if err != nil {
		return nil, nil, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
			"the command's network namespace could not be made: %v; the command was not run. Remedy: %s", err, nsenterRemedy)}
	}
	if n.proxy == nil {
		return ns, nil, nil
	}
	g, err := openGate(n.proxy, ns, b, s, n.log)
	if err != nil {
		_ = ns.Close()
		return nil, nil, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
			"the domain proxy's listener could not be made in the command's network namespace: %v; the command was not run", err)}
	}
	return ns, g, nil
}

// own makes a namespace and gate for one command without a session under
// the proxy (the gate judges with no session grants); release lets both go.
func (n *sessionNets) own(b subproc.Bwrap) (*subproc.NetNS, *gate, func(), error) {
	ns, g, err := n.make(b, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	e := &sessionNet{ns: ns, gate: g}
	return ns, g, e.let, nil
}

// let lets the namespace go, after closing its gate and its diagnostics.
func (e *sessionNet) let() {
	if e.gate != nil {
		e.gate.close()
	}
	e.diagMu.Lock()
	if e.diag != nil {
		_ = e.diag.Close()
	}
	e.gone = true
	e.diagMu.Unlock()
	_ = e.ns.Close()
}

// ownBound returns the identities of the files the Unix sockets bound in
// the namespace s already has for the command user cred (nil: the
// server's) are bound to: those of the session's commands (a server a
// background command runs), asked of the kernel (subproc.UnixDiag, made
// with the namespace when ownSockets), so no rename or symlink swapped in
// after a bind can make them name another socket. Nil when s has no
// namespace yet for that user, or its diagnostics could not be had (then
// nothing is exempted: fail closed).
func (n *sessionNets) ownBound(s *session.Session, cred *syscall.Credential) map[subproc.FileID]bool {
	k := netKey{s: s, uid: uint32(os.Geteuid()), gid: uint32(os.Getegid())} // the key join uses
	if cred != nil {
		k.uid, k.gid = cred.Uid, cred.Gid
	}
	n.mu.Lock()
	e := n.nets[k]
	n.mu.Unlock()
	if e == nil {
		return nil
	}
	e.mu.Lock()
	ns := e.ns
	e.mu.Unlock()
	if ns == nil {
		return nil
	}
	e.diagMu.Lock()
	defer e.diagMu.Unlock()
	if e.gone || e.diag == nil {
		return nil
	}
	bound, err := e.diag.Bound()
	if err != nil {
		return nil
	}
	return bound
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
