package execsandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/internal/textpages"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execlocal"
	"github.com/dsh-go/harness/services/netproxy"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// Runner confines each command by its request's policy. It is safe for
// concurrent use.
type Runner struct {
	cfg    Config
	run    exec.Config
	policy *sandboxpolicy.Service
	// helper is the helper program (the embedded one, or the harness
	// binary opened once): the helper of the unconfined and Landlock runs,
	// bubblewrap's inner stage and the network namespace's stages.
	helper func() (*subproc.Program, error)
	// bwrap is the bubblewrap isolation's state (nil under
	// IsolationLandlock).
	bwrap *bwrapIsolation
	// finder finds the protected paths, for both isolations.
	finder *finder
	// masker finds the deny-read paths, for both isolations.
	masker *masker
	// proxy is the domain proxy (nil without AllowDomains).
	proxy *netproxy.Proxy
	// named are the named Unix sockets as pinned at start (pinSockets).
	named []pinnedSocket
	// sockWalk finds the socket files inside the writable roots.
	sockWalk *socketWalker
}

// New returns the confining runner. Errors: a nil policy service; an invalid
// runner config (see execlocal.Validate); an unknown isolation; a memory or
// process cap below -1; a named Unix socket that is not an absolute, clean
// path of a socket that exists (CheckUnixSocket); AllowDomains with Network
// or IsolationLandlock, or a name netproxy.New refuses
// (exec.CodeInvalidRequest naming it). A missing bubblewrap is not an error
// here: confined commands are refused with the reason (see Run).
func New(cfg Config, run exec.Config, policy *sandboxpolicy.Service) (*Runner, error) {
	if policy == nil {
		return nil, &exec.Error{Code: exec.CodeInvalidRequest, Message: "execsandbox: a sandboxpolicy.Service is required"}
	}
	switch {
	case cfg.Isolation != "" && cfg.Isolation != IsolationBwrap && cfg.Isolation != IsolationLandlock:
		return nil, &exec.Error{Code: exec.CodeInvalidRequest, Message: fmt.Sprintf("execsandbox: isolation %q is not %s or %s", cfg.Isolation, IsolationBwrap, IsolationLandlock)}
	case cfg.Memory < -1 || cfg.Pids < -1:
		return nil, &exec.Error{Code: exec.CodeInvalidRequest, Message: "execsandbox: memory and pids caps are positive, 0 for the default or -1 for none"}
	}
	for _, p := range cfg.UnixSocketPaths {
		if err := CheckUnixSocket(p); err != nil {
			return nil, &exec.Error{Code: exec.CodeInvalidRequest, Message: "execsandbox: named Unix socket " + err.Error()}
		}
	}
	named, err := pinSockets(cfg.UnixSocketPaths)
	if err != nil {
		return nil, &exec.Error{Code: exec.CodeInvalidRequest, Message: "execsandbox: named Unix socket " + err.Error()}
	}
	if cfg.Isolation == "" {
		cfg.Isolation = IsolationBwrap
	}
	if cfg.GPGAgent != nil {
		if cfg.Isolation != IsolationBwrap {
			return nil, &exec.Error{Code: exec.CodeInvalidRequest, Message: "execsandbox: --gpg-agent needs the bubblewrap isolation (its socket is bound into the command's view)"}
		}
		agent, err := pinAgent(*cfg.GPGAgent)
		if err != nil {
			return nil, &exec.Error{Code: exec.CodeInvalidRequest, Message: "execsandbox: --gpg-agent: " + err.Error()}
		}
		named = append(named, agent)
	}
	run, err = execlocal.Validate(run)
	if err != nil {
		return nil, err
	}
	helper, err := execlocal.OpenHelper(run)
	if err != nil {
		return nil, err
	}
	r := &Runner{cfg: cfg, run: run, policy: policy, helper: helper, finder: newFinder(policy), masker: newMasker(policy), named: named, sockWalk: newSocketWalker()}
	if r.proxy, err = newProxy(cfg); err != nil {
		return nil, err
	}
	if cfg.Isolation == IsolationBwrap {
		r.bwrap = newBwrapIsolation(helper, policy, r.finder, r.masker, r.proxy, !cfg.UnixSockets, cfg.Log)
	}
	return r, nil
}

// Confines reports true.
func (r *Runner) Confines() bool { return true }

// Run runs req confined by req.Policy (see exec.Runner). A request without a
// policy, or with an unknown mode, is refused (fail closed); under read-only
// and workspace-write, a host where the isolation cannot work (bubblewrap
// missing or unable to start; Landlock missing) refuses the command with
// exec.CodeUnavailable and the remedy, as does one under IsolationLandlock
// with named Unix sockets where Landlock cannot scope connects (ABI below
// 9), and one whose bound sockets cannot be listed for masking; a workdir
// at or beneath a protected path is refused with exec.CodeInvalidRequest;
// protected paths that cannot all be found within the call's deadline and
// budget refuse the command with exec.CodeUnavailable naming where, but
// when the command's own timeout cut that search (or another of its view's)
// the result is the command timing out (TimedOut, exit -1: nothing ran;
// timedOutStarting). Once
// the command has ended, each writable root's own mode, owner and times are
// put back where the command changed them (rootGuard; a failure to is
// logged, the result stands).
func (r *Runner) Run(ctx context.Context, req exec.Request) (res exec.Result, err error) {
	began := time.Now()
	defer func() {
		if timedOutStarting(ctx, req, err) {
			res, err = r.timedOutResult(req, began, err), nil
		}
	}()
	if err := execlocal.Check(req); err != nil {
		return exec.Result{}, err
	}
	if req.Policy == nil || !req.Policy.Mode.Valid() {
		// Fail closed: no policy, no command.
		return exec.Result{}, &exec.Error{Code: exec.CodeInvalidRequest, Message: "execsandbox: the command has no valid sandbox policy"}
	}
	if req.Policy.Mode == sandbox.DangerFullAccess {
		return r.runFullAccess(ctx, req)
	}
	if subproc.Probe().LandlockABI < 1 {
		return exec.Result{}, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
			"sandbox mode %q is unavailable here: %v; only %s runs commands without the sandbox", req.Policy.Mode, subproc.ErrNoLandlock, sandbox.DangerFullAccess)}
	}
	if r.bwrap == nil && r.namedOnly() && !subproc.Probe().ResolveUnix {
		return exec.Result{}, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
			"sandbox mode %q cannot keep commands to the named Unix sockets here (Landlock ABI %d under --exec-isolation landlock): %v. "+
				"Remedy: run with --exec-isolation bwrap (the default), which masks every other socket in the command's view; or use a kernel with Landlock ABI 9; "+
				"or --unix-sockets allow (every socket reachable)",
			req.Policy.Mode, subproc.Probe().LandlockABI, subproc.ErrNamedSockets)}
	}
	// The sockets bound in the network namespaces are listed beside the
	// rest of the view (the reservations, the searches), which waits for
	// them before it is complete; those inside the roots are found first.
	pending := r.socketsBeside(ctx, *req.Policy, req.Timeout)
	var refused refusals
	restore := heldRoots.hold(req.Policy.WritableRoots())
	defer func() {
		if rerr := restore(); rerr != nil && r.cfg.Log != nil {
			r.cfg.Log.Warn("execsandbox: a command changed a writable root itself", zap.Error(rerr))
		}
	}()
	if r.bwrap != nil {
		res, refused, err = r.bwrap.run(ctx, r.cfg, r.run, req, pending.wait, began)
	} else {
		var socks socketView
		if socks, err = pending.wait(); err != nil {
			return exec.Result{}, err
		}
		var conf *subproc.Confinement
		var check *gitStateCheck
		if conf, check, err = r.landlockConfinement(ctx, req, socks); err != nil {
			return exec.Result{}, err
		}
		// Its TMPDIR in its temp, as under bubblewrap: the host's /tmp is
		// not writable (go build, pip and npm make their scratch there).
		res, err = execlocal.RunSpec(ctx, r.helper, r.run, req, conf, func(env []string) []string { return tempDirEnv(*req.Policy, env) })
		if err == nil {
			res.Confinement = &exec.Confinement{Masked: conf.ReadDenied, MaskedByLandlock: len(conf.ReadDenied) > 0}
		}
		if check != nil {
			d := check.disarm(ctx)
			if err == nil {
				res.Confinement.Disarmed = d
			}
		}
	}
	if err == nil {
		socks, _ := pending.wait() // waited for by the view
		c := r.confinement(*req.Policy, socks.named)
		if res.Confinement != nil {
			c.Masked, c.Disarmed, c.Reserved, c.WholeGitDirs = res.Confinement.Masked, res.Confinement.Disarmed, res.Confinement.Reserved, res.Confinement.WholeGitDirs
			c.MaskedByLandlock = res.Confinement.MaskedByLandlock
		}
		c.Refused, c.RefusedMore = refused.hosts, refused.more
		res.Confinement = c
	}
	return res, err
}

// timedOutStarting reports whether err, Run's, is a search for the
// command's view cut by the command's timeout (searchContext) while the
// caller still waited: the command timed out before it started. A refusal
// (an invalid request: a protected workdir, no policy) never is, however
// late it came; nor is anything else, a search that failed for another
// reason included.
func timedOutStarting(ctx context.Context, req exec.Request, err error) bool {
	if err == nil || req.Timeout <= 0 || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	ee, ok := errors.AsType[*exec.Error](err)
	return !ok || ee.Code != exec.CodeInvalidRequest
}

// timedOutResult is the result of a command whose timeout passed before
// it started: a search for its view (bounded by the timeout, see
// searchContext) was cut by it, and err says which. Nothing ran; the
// command timed out, which is what its caller is told (exit -1, TimedOut),
// rather than a failure that blames the search. err is logged.
func (r *Runner) timedOutResult(req exec.Request, began time.Time, err error) exec.Result {
	if r.cfg.Log != nil {
		r.cfg.Log.Warn("execsandbox: the command's timeout passed before it started; nothing ran",
			zap.Duration("timeout", req.Timeout), zap.Error(err))
	}
	d := time.Since(began)
	return exec.Result{ExitCode: -1, TimedOut: true, Duration: d, Start: d}
}

// namedOnly reports whether commands may reach the named Unix sockets only
// (some are named, and Unix sockets are not allowed wholesale).
func (r *Runner) namedOnly() bool { return !r.cfg.UnixSockets && len(r.named) > 0 }

// ownSockets reports whether commands make Unix sockets of their own
// beneath their writable roots under --unix-sockets deny (issue 36): where
// every other socket is kept from them, by the bubblewrap view's masks or
// by Landlock's scoping of connects (ABI 9); the Landlock isolation below
// ABI 9 refuses them AF_UNIX sockets.
func (r *Runner) ownSockets() bool {
	return !r.cfg.UnixSockets && (r.bwrap != nil || subproc.Probe().ResolveUnix)
}

// landlockConfinement is what a command is confined to under
// IsolationLandlock: writes beneath WritableRoots(policy) only (none at all
// in read-only), minus the protected paths that exist inside them
// (read-only bind mounts where the kernel allows a mount namespace), and
// the configured network and Unix sockets (socks.named), and reads of
// everything but the deny-read paths that exist (readDenied); under
// workspace-write, the check of git state that runs programs, and of the
// protected links, to make when the command ends (gitStateCheck; nil
// otherwise). Errors: readDenied's;
// the protected-path search did not finish (see finder.find).
func (r *Runner) landlockConfinement(ctx context.Context, req exec.Request, socks socketView) (*subproc.Confinement, *gitStateCheck, error) {
	roots := req.Policy.WritableRoots()
	denied, err := r.readDenied(ctx, req, roots)
	if err != nil {
		return nil, nil, err
	}
	conf := &subproc.Confinement{
		WritableRoots: roots, Network: r.cfg.Network, UnixSockets: r.cfg.UnixSockets, UnixSocketPaths: socks.named,
		OwnUnixSockets: r.ownSockets(), ReadDenied: denied,
	}
	var check *gitStateCheck
	if req.Policy.Mode == sandbox.WorkspaceWrite {
		found, err := r.finder.find(searchContext(ctx, req.Timeout), roots, os.Geteuid())
		if err != nil {
			return nil, nil, err
		}
		conf.ReadOnlyPaths = paths(found)
		dirs := gitDirsOf(found)
		check = &gitStateCheck{before: listGitStates(dirs), dirs: dirs, links: linksOf(found, nil, roots), search: func(ctx context.Context) ([]sandboxpolicy.ProtectedEntry, error) {
			return r.finder.find(ctx, roots, os.Geteuid())
		}}
	}
	return conf, check, nil
}

func provide(p Params) (*Runner, error) {
	if p.Config.Log == nil {
		p.Config.Log = p.Log
	}
	r, err := New(p.Config, p.Run, p.Policy)
	if err != nil {
		return nil, err
	}
	warm, stopWarm := context.WithCancel(context.Background())
	warmed := make(chan struct{})
	p.Lifecycle.Append(fx.Hook{
		OnStart: func(context.Context) error {
			go func() {
				defer close(warmed)
				r.Warm(warm)
				// The walks leave garbage the size of what they read
				// (root's secrets: about 2 MB of heap): returned now
				// rather than held by an idle server (issue 36); a single
				// call's process ends instead.
				if !r.cfg.OneCall {
					debug.FreeOSMemory()
					textpages.Shrink()
				}
			}()
			return nil
		},
		// The warm-up is waited for (its searches stop at once; trying
		// bubblewrap takes milliseconds): a process that exits while
		// bubblewrap is being tried kills it half set up, and its sandbox's
		// first process then waits forever for a parent that is gone (one
		// stray process, with its namespaces, per `harness call` or `harness
		// tools` that ended first).
		OnStop: func(ctx context.Context) error {
			stopWarm()
			select {
			case <-warmed:
			case <-ctx.Done():
			}
			return r.Close()
		},
	})
	return r, nil
}

// Warm finds bubblewrap and seals the inner stage's copy (what the first
// command would otherwise wait for), then, side by side, tries bubblewrap,
// makes the first session's network namespace under network deny
// (sessionNets.refill), walks root's secrets when commands run as uid 0 (secretCache)
// and searches the protected paths of the default policy's writable roots
// but its temp roots (workspace-write's, whatever the default mode), its
// deny-read paths and its sockets, so the first command finds both searches' caches filled: a
// workspace holding a directory of a million entries costs that command an
// fstat per directory, not the reading of them all, and a command started
// during the protected-path search waits for it instead of reading the
// same directories again. It returns when the searches end or ctx is
// done; its result is only the caches.
func (r *Runner) Warm(ctx context.Context) {
	policy := r.policy.Default()
	var wg sync.WaitGroup
	defer wg.Wait()
	if r.bwrap != nil {
		// What every first command would otherwise do itself: find and
		// try bubblewrap, and seal the inner stage's copy; under network
		// deny, make the first session's namespace (sessionNets.refill),
		// side by side with the try (a bubblewrap that cannot make one
		// fails both; the try's error is what a command reports).
		wg.Go(func() { _, _ = r.bwrap.exe() })
		exe, err := r.bwrap.found()
		stage, serr := r.bwrap.stage()
		if err == nil && serr == nil && !r.cfg.Network && !r.cfg.OneCall && policy.WorkspaceRoot != "" {
			cred, _ := commandUser(policy, nil)
			r.bwrap.nets.refill(subproc.Bwrap{Exe: exe, Stage: stage, Credential: cred})
		}
	}
	if policy.WorkspaceRoot == "" {
		return
	}
	policy.Mode = sandbox.WorkspaceWrite
	// Not the temp roots: a session has a temp area of its own, and a
	// shared /tmp is the machine's, as large and as busy as others make it.
	policy.TempRoots = nil
	cred, _ := commandUser(policy, nil)
	// Root's secrets (for a uid-0 command), the protected paths, the
	// deny-read paths and the sockets to mask, each into its own cache,
	// side by side (issue 34: the first command waits for them; a search
	// it starts meanwhile waits for the warm-up's walk of the same roots,
	// protectscan, or rootSecretCache's lock).
	if r.bwrap != nil && uidOf(cred) == 0 && !r.cfg.OneCall {
		// Root's own secrets, which a uid-0 command may not read, as its
		// commands look them up (a session's temp area is not part of
		// the kept result's key).
		wg.Go(func() { _, _ = rootSecretCache.get(ctx, policy, os.Getenv("HOME"), accountOf(cred).gids, false) })
	}
	wg.Go(func() { r.finder.warm(ctx, policy.WritableRoots(), uidOf(cred)) })
	wg.Go(func() { _, _ = r.masker.find(ctx, policy, cred) })
	wg.Go(func() { _, _ = r.sockets(ctx, policy, 0) })
}

// Close releases what the runner made for its commands (the parent cgroup
// of their groups, where cgroups carry the caps; the sessions' network
// namespaces, which no later command joins: it is refused; the git
// directories' `commondir` placeholders it kept, keptReservations). Commands still
// running keep running under their own caps and in their namespace; call
// it after the last one.
func (r *Runner) Close() error {
	if r.bwrap == nil {
		return nil
	}
	r.bwrap.nets.close()
	r.bwrap.kept.close()
	var err error
	if r.proxy != nil {
		err = r.proxy.Close()
	}
	return errors.Join(err, r.bwrap.limits.close())
}

// Caps returns a command's memory cap in bytes and its process cap (0:
// none), exec.Capped.
func (r *Runner) Caps() (memoryBytes, pids int64) {
	l := rlimits(r.cfg)
	return int64(l.Data), int64(l.Procs)
}

// GrantsHosts reports whether confined commands reach the network through
// the domain proxy (AllowDomains), so a command may be allowed more hosts
// (exec.HostGranter).
func (r *Runner) GrantsHosts() bool { return r.proxy != nil }

// Module provides the confining runner as exec.Runner, in place of
// execlocal.Module. It needs a *sandboxpolicy.Service.
var Module = fx.Module("execsandbox", fx.Provide(fx.Annotate(provide, fx.As(new(exec.Runner)))))

var (
	_ exec.Runner      = (*Runner)(nil)
	_ exec.HostGranter = (*Runner)(nil)
)

// newProxy returns the domain proxy of cfg.AllowDomains. Under network
// deny with the bubblewrap isolation there is one even with no names
// (issue 36): every host is refused at once, with the host named, rather
// than a lookup that fails as if temporarily (EAI_AGAIN, which npm and
// pip retry for a minute), and the user may allow a host for a command or
// the session (allow_hosts). Nil with Network, or under IsolationLandlock
// with no names. Errors (exec.CodeInvalidRequest): names with Network (they
// would filter a network commands already have) or with IsolationLandlock
// (no network namespace to hold the listener); a name netproxy.New
// refuses.
func newProxy(cfg Config) (*netproxy.Proxy, error) {
	if len(cfg.AllowDomains) == 0 && (cfg.Network || cfg.Isolation != IsolationBwrap) {
		return nil, nil
	}
	switch {
	case cfg.Network:
		return nil, &exec.Error{Code: exec.CodeInvalidRequest, Message: "execsandbox: allowed domains filter a network commands are otherwise refused; they cannot be combined with network allow"}
	case cfg.Isolation != IsolationBwrap:
		return nil, &exec.Error{Code: exec.CodeInvalidRequest, Message: "execsandbox: allowed domains need the bubblewrap isolation (the proxy listens inside each command's network namespace); the landlock isolation has none"}
	}
	log := cfg.Log
	if log == nil {
		log = zap.NewNop()
	}
	p, err := netproxy.New(netproxy.Config{Allow: cfg.AllowDomains, Resolver: cfg.Resolver, Decided: cfg.ProxyDecided}, log.Named("netproxy"))
	if err != nil {
		return nil, &exec.Error{Code: exec.CodeInvalidRequest, Message: err.Error()}
	}
	return p, nil
}
