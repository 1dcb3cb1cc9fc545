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
// never do. A namespace is made ahead (refill) and taken at the session's
// first confined command
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

	mu      sync.Mutex // guards nets, stopped, spare and preparing
	nets    map[netKey]*sessionNet
	stopped bool
	stop    chan struct{}
	ended   sync.WaitGroup // the goroutines letting namespaces go or making the spare
	// spare is a namespace made ahead for the next one a session needs
	// (refill), so a session's first command does not wait for it; nil
	// while none is ready. Each is given to one session only.
	spare *spareNet
	// preparing is the spare being made, nil when none is.
	preparing *spareNet
}

// spareNet is a namespace made ahead, for one user, with its socket
// diagnostics when the runner gives its commands their own sockets (nil
// otherwise, or when they could not be had: join makes them again).
type spareNet struct {
	uid, gid   uint32
	exe, stage *subproc.Program
	ns         *subproc.NetNS
	diag       *subproc.UnixDiag
	// made is closed once the spare's making has ended, made or not.
	made chan struct{}
}

// fits reports whether sp was made for b's user and programs.
func (sp *spareNet) fits(b subproc.Bwrap) bool {
	uid, gid := netUser(b.Credential)
	return sp != nil && sp.uid == uid && sp.gid == gid && sp.exe == b.Exe && sp.stage == b.Stage
}

// close lets sp's namespace and diagnostics go.
func (sp *spareNet) close() {
	if sp.diag != nil {
		_ = sp.diag.Close()
	}
	_ = sp.ns.Close()
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
	k := netKey{s: s}
	k.uid, k.gid = netUser(b.Credential)
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
	var (
		err  error
		diag *subproc.UnixDiag
	)
	if e.ns, e.gate, diag, err = n.make(b, s); err != nil {
		// Nothing kept: the next command tries again.
		n.forget(k, e)
		return nil, nil, err
	}
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		if diag != nil {
			_ = diag.Close() // the spare's, not yet e's
		}
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
		if e.diag = diag; diag == nil {
			e.diag, _ = e.ns.UnixDiag(b.Stage, b.Credential)
		}
		e.diagMu.Unlock()
	} else if diag != nil {
		_ = diag.Close()
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

// make makes a namespace for b, or takes the spare made for b's user,
// and, with the proxy, its gate for s (nil: one command's); diag is the
// spare's socket diagnostics (nil: none made). Errors:
// exec.CodeUnavailable, naming what failed.
func (n *sessionNets) make(b subproc.Bwrap, s *session.Session) (ns *subproc.NetNS, g *gate, diag *subproc.UnixDiag, err error) {
	if sp := n.take(b); sp != nil {
		ns, diag = sp.ns, sp.diag
	} else if ns, err = n.newNetNS(b); err != nil {
		return nil, nil, nil, err
	}
	if n.proxy == nil {
		return ns, nil, diag, nil
	}
	if g, err = openGate(n.proxy, ns, b, s, n.log); err != nil {
		if diag != nil {
			_ = diag.Close()
		}
		_ = ns.Close()
		return nil, nil, nil, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
			"the domain proxy's listener could not be made in the command's network namespace: %v; the command was not run", err)}
	}
	return ns, g, diag, nil
}

// newNetNS makes a namespace for b (subproc.NewNetNS). Errors:
// exec.CodeUnavailable, naming what failed.
func (n *sessionNets) newNetNS(b subproc.Bwrap) (*subproc.NetNS, error) {
	enter, err := n.enter()
	var ns *subproc.NetNS
	if err == nil {
		ns, err = subproc.NewNetNS(b, enter)
	}
	if err != nil {
		return nil, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
			"the command's network namespace could not be made: %v; the command was not run. Remedy: %s", err, nsenterRemedy)}
	}
	return ns, nil
}

// take returns the spare when it was made for b's user and programs, nil
// otherwise; the spare is then no longer the runner's. One being made for
// them is waited for: it is ready sooner than another made now.
func (n *sessionNets) take(b subproc.Bwrap) *spareNet {
	n.mu.Lock()
	if p := n.preparing; p.fits(b) {
		n.mu.Unlock()
		<-p.made
		n.mu.Lock()
	}
	defer n.mu.Unlock()
	sp := n.spare
	if !sp.fits(b) {
		return nil
	}
	n.spare = nil
	return sp
}

// refill makes a spare namespace for b's user in the background when there
// is none (a spare of another user is let go), so the next session's first
// command takes it instead of waiting for one (issue 34: the first command
// is not special). It returns at once; a namespace that cannot be made is
// left to the command that needs it, which reports why.
func (n *sessionNets) refill(b subproc.Bwrap) {
	n.mu.Lock()
	if n.stopped || n.preparing != nil || n.spare.fits(b) {
		n.mu.Unlock()
		return
	}
	old := n.spare
	uid, gid := netUser(b.Credential)
	sp := &spareNet{uid: uid, gid: gid, exe: b.Exe, stage: b.Stage, made: make(chan struct{})}
	n.spare, n.preparing = nil, sp
	n.ended.Add(1)
	n.mu.Unlock()
	if old != nil {
		old.close()
	}
	go func() {
		defer n.ended.Done()
		defer close(sp.made)
		ns, err := n.newNetNS(b)
		if err == nil {
			sp.ns = ns
			if n.ownSockets {
				sp.diag, _ = ns.UnixDiag(b.Stage, b.Credential)
			}
		}
		n.mu.Lock()
		n.preparing = nil
		keep := err == nil && !n.stopped && n.spare == nil
		if keep {
			n.spare = sp
		}
		n.mu.Unlock()
		if err == nil && !keep {
			sp.close()
		}
	}()
}

// netUser is the user a namespace for cred maps (nil: the server's).
func netUser(cred *syscall.Credential) (uid, gid uint32) {
	if cred != nil {
		return cred.Uid, cred.Gid
	}
	return uint32(os.Geteuid()), uint32(os.Getegid())
}

// own makes a namespace and gate for one command without a session under
// the proxy (the gate judges with no session grants); release lets both go.
func (n *sessionNets) own(b subproc.Bwrap) (*subproc.NetNS, *gate, func(), error) {
	ns, g, diag, err := n.make(b, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	if diag != nil {
		_ = diag.Close()
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
	k := netKey{s: s} // the key join uses
	k.uid, k.gid = netUser(cred)
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
	sp := n.spare
	n.spare = nil
	n.mu.Unlock()
	if sp != nil {
		sp.close()
	}
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
