package execsandbox

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/protectscan"
	"github.com/dsh-go/harness/internal/realpath"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execlocal"
	"github.com/dsh-go/harness/services/netproxy"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// bwrapRemedy is what a user does when bubblewrap is missing or cannot
// make a sandbox on this host (subproc.ProbeBwrap fails): never for a
// command whose own view could not be made.
const bwrapRemedy = "install Debian's or Ubuntu's bubblewrap package (apt-get install bubblewrap; other distributions ship it under the same name) and allow unprivileged user namespaces, " +
	"or run with --exec-isolation landlock (weaker: see `harness policy`); file tools work without it"

// bwrapIsolation runs commands in bubblewrap. bwrap is found, opened and
// tried once, at the first confined command.
type bwrapIsolation struct {
	stage  func() (*subproc.Program, error)
	policy *sandboxpolicy.Service
	// found finds and opens bwrap; exe is found's, once tried
	// (subproc.ProbeBwrap).
	found, exe func() (*subproc.Program, error)
	limits     *limiter
	finder     *finder
	masker     *masker
	// nets are the sessions' network namespaces under network deny.
	nets *sessionNets
	// kept are the reservations held until Close (a `commondir`).
	kept keptReservations
	// janitor starts the process that removes this server's placeholders
	// should it die (subproc.StartJanitor), at the first command.
	janitor sync.Once
	log     *zap.Logger
}

func newBwrapIsolation(stage func() (*subproc.Program, error), policy *sandboxpolicy.Service, f *finder, m *masker, proxy *netproxy.Proxy, ownSockets bool, log *zap.Logger) *bwrapIsolation {
	roots := func() []string { return policy.Default().Roots() }
	b := &bwrapIsolation{stage: stage, policy: policy, limits: newLimiter(), finder: f, masker: m, nets: newSessionNets(roots, proxy, ownSockets, log), log: log}
	b.found = sync.OnceValues(func() (*subproc.Program, error) {
		return findProgram("bwrap", "bubblewrap (bwrap)", os.Getenv("PATH"), roots())
	})
	b.exe = sync.OnceValues(func() (*subproc.Program, error) {
		exe, err := b.found()
		if err != nil {
			return nil, err
		}
		if err := subproc.ProbeBwrap(exe); err != nil {
			return nil, fmt.Errorf("bubblewrap (%s) cannot start a sandbox here: %w%s", exe.Path(), err, namespaceCause(procSys))
		}
		return exe, nil
	})
	return b
}

// findProgram returns the executable name (bwrap, nsenter) from the first
// directory of path (a PATH value) that holds it and lies outside every
// writable root, opened for execution by descriptor: a copy inside a
// writable root, or writable by anyone but its owner, or owned by neither
// root nor this user, is never run. Errors name it as what.
func findProgram(name, what, path string, roots []string) (*subproc.Program, error) {
	for dir := range strings.SplitSeq(path, ":") {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		cand, err := filepath.EvalSymlinks(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		if slices.ContainsFunc(roots, func(r string) bool {
			return dirfd.Beneath(r, cand) || dirfd.Beneath(r, filepath.Join(dir, name))
		}) {
			continue
		}
		exe, err := subproc.OpenProgram(cand)
		if err != nil {
			continue
		}
		uid, othersWrite, err := exe.Owner()
		if err != nil || othersWrite || (uid != 0 && uid != os.Geteuid()) {
			continue
		}
		return exe, nil
	}
	return nil, fmt.Errorf("%s is not installed, or only inside a writable root or writable by others", what)
}

// run runs req in bubblewrap; refused is what the domain proxy
// refused while it ran (none without the proxy). Its view is found afresh
// for each start (view), and started again while a path of it changes
// between the search and the start (startFresh).
func (b *bwrapIsolation) run(ctx context.Context, cfg Config, run exec.Config, req exec.Request, socks func() (socketView, error), began time.Time) (res exec.Result, refused refusals, err error) {
	exe, err := b.exe()
	if err != nil {
		return exec.Result{}, refusals{}, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
			"sandbox mode %q is unavailable: %v; the command was not run. Remedy: %s", req.Policy.Mode, err, bwrapRemedy)}
	}
	cred, env := commandUser(*req.Policy, run.Env)
	stage, err := b.stage()
	if err != nil {
		return exec.Result{}, refusals{}, err
	}
	b.janitor.Do(func() {
		warn := func(msg string, err error) { b.log.Warn(msg, zap.Error(err)) }
		if err := subproc.StartJanitor(stage, warn); err != nil {
			b.log.Warn("cannot start the process that removes the placeholders of this server's commands should it die; "+
				"a crash leaves them until a later command reserves and releases them", zap.Error(err))
		}
	})
	bw := subproc.Bwrap{Exe: exe, Stage: stage, Credential: cred}
	var g *gate
	switch s := session.FromContext(ctx); {
	case cfg.Network:
	case s != nil:
		// The session's loopback: a server one of its commands runs is
		// reachable by the next.
		if bw.Net, g, err = b.nets.join(s, bw); err != nil {
			return exec.Result{}, refusals{}, err
		}
	case b.nets.proxy != nil:
		// No session: a namespace and proxy listener of its own.
		var release func()
		if bw.Net, g, release, err = b.nets.own(bw); err != nil {
			return exec.Result{}, refusals{}, err
		}
		defer release()
	}
	if bw.Net != nil && !cfg.OneCall {
		// The next namespace, made ahead once this command took the
		// spare (sessionNets.refill).
		defer b.nets.refill(subproc.Bwrap{Exe: exe, Stage: stage, Credential: cred})
	}
	var etc []subproc.EtcFile
	if g != nil {
		env = g.env(env)
		w := g.enter(req.AllowHosts)
		defer func() { refused = g.leave(w) }()
		etc = g.etcFiles(req.AllowHosts)
	}
	c := b.limits.forCommand(cfg)
	defer c.done()
	var check *gitStateCheck
	// Root's own workspace: root's secrets stay root's. Kept current
	// between commands (secretCache), looked up once for the command, not
	// at each start (a start made again because a path of its view changed
	// walks again: what changed may be among them).
	var secrets []subproc.Masked
	var whole []string // the last start's git directories protected whole (startView.whole)
	starts := 0
	// The searches of every start share the command's timeout: a view
	// that keeps changing cannot hold the call for a timeout per start.
	prep := searchContext(ctx, req.Timeout)
	out, conf, tries, err := startFresh(prep, func() (subproc.Outcome, *subproc.Confinement, error) {
		if starts++; uidOf(cred) == 0 && (secrets == nil || starts > 1) {
			var serr error
			if secrets, serr = rootSecretCache.get(prep, *req.Policy, os.Getenv("HOME"), accountOf(cred).gids, starts > 1); serr != nil {
				return subproc.Outcome{}, nil, serr
			}
		}
		v, err := b.view(prep, cfg, req, cred, envValue(env, "HOME"), socks, secrets)
		if ce, ok := errors.AsType[*changedError](err); ok {
			return subproc.Outcome{Status: subproc.Status{Error: ce.Error(), Changed: true}}, nil, nil
		}
		if err != nil {
			return subproc.Outcome{}, nil, err
		}
		defer v.release()
		conf := v.conf
		if req.Policy.Mode == sandbox.WorkspaceWrite {
			roots, uid := conf.WritableRoots, uidOf(cred)
			check = &gitStateCheck{before: listGitStates(v.gitDirs), dirs: v.gitDirs, links: v.links, search: func(ctx context.Context) ([]sandboxpolicy.ProtectedEntry, error) {
				return b.finder.find(ctx, roots, uid)
			}}
		}
		whole = v.whole
		conf.Limits = c.rlimits
		conf.EtcFiles = etc
		out, err := subproc.RunBwrap(ctx, bw, subproc.Spec{
			Command: req.Command, Dir: req.Workdir, Env: env, Confine: conf,
		}, req.Timeout, run.OutputLimit, c.placed, execlocal.Watch(req))
		return out, conf, err
	})
	if errors.Is(err, subproc.ErrNetNSClosed) {
		// The session ended between joining and starting.
		return exec.Result{}, refusals{}, sessionEnded()
	}
	res, err = bwrapResult(out, err, conf, exe, tries)
	if res.Confinement != nil {
		res.Confinement.WholeGitDirs = whole
	}
	if !out.Status.StartedAt.IsZero() {
		res.Start = out.Status.StartedAt.Sub(began)
	}
	if check != nil && (err != nil || out.Status.Started || out.Status.Stopped) {
		// What the command left in the repositories' rebase and sequencer
		// state that would make git on the host run a program, however it
		// ended.
		d := check.disarm(ctx)
		if res.Confinement != nil {
			res.Confinement.Disarmed = d
		}
	}
	return res, refusals{}, err // refused is set as it returns (leave)
}

// startView is the view of one start of a command: its confinement (but
// its Limits and /etc files), the git directories and the protected links
// found (gitStateCheck), the git directories protected whole (whole:
// wholeGitDirs), and release, which ends the reservations; call it once
// the start has ended.
type startView struct {
	conf    *subproc.Confinement
	gitDirs []string
	links   []protectedLink
	whole   []string
	release func()
}

// view is the confinement of one start of req (but its Limits), found now,
// for a command running as cred: the writable roots, the network and
// the sockets (socks, waited for once the searches of the paths are
// done); under workspace-write the reservations (reservedIn, then
// reserveMembers) and the protected paths (finder.find); the deny-read
// masks (masker.find), with secrets (root's files a uid-0 command may not
// read: rootSecrets, walked by the caller); and the git directories and the
// protected links found (gitStateCheck). A view of more than
// maxViewBinds binds has the git directories of the repositories not
// holding req's workdir protected whole (wholeGitDirs), named in whole;
// one past bubblewrap's limit on its arguments is refused (tooManyArgs).
// Errors (the runner's *exec.Error, nothing left held): a reservation or a
// search that failed, a workdir at or beneath a protected,
// reserved or masked path; a *changedError (nothing left held either).
func (b *bwrapIsolation) view(ctx context.Context, cfg Config, req exec.Request, cred *syscall.Credential, home string, socks func() (socketView, error), secrets []subproc.Masked) (_ startView, err error) {
	policy := *req.Policy
	roots := policy.WritableRoots()
	conf := &subproc.Confinement{
		WritableRoots: roots,
		Network:       cfg.Network,
		UnixSockets:   cfg.UnixSockets,
		// Its own sockets beneath the writable roots: every socket
		// bound before it started is masked (or, from Landlock ABI 9,
		// connects are scoped to the roots and the named ones).
		OwnUnixSockets: !cfg.UnixSockets,
	}
	var v startView
	var held []*subproc.Reservation
	releaseAll := func() { subproc.ReleaseAll(held...) }
	defer func() {
		if err != nil {
			releaseAll()
		}
	}()
	if policy.Mode == sandbox.WorkspaceWrite {
		// A workdir its user cannot reach is refused for that first (its
		// placeholders could not be made either).
		if err = reachable(req.Workdir, accountOf(cred)); err != nil {
			return startView{}, err
		}
		protect := b.policy.Protected()
		homes := b.policy.DenyRead().Homes()
		// Reserved first: a mount point another command's bubblewrap
		// makes during the search is then known for what it is.
		var pins []sandboxpolicy.ProtectedEntry
		var met []string // the symlinks on the way to reserved names
		reservable := sandboxpolicy.Reservable(policy, protect, homes)
		held, pins, met, err = reservedIn(policy, protect, reservable, homes, home, held)
		pins = append(pins, hostRunRoots(policy, protect)...)
		if err != nil {
			return startView{}, &exec.Error{Code: exec.CodeUnavailable, Message: err.Error() +
				"; the command was not run rather than run able to create the workspace's .git or a host-run file"}
		}
		var found []sandboxpolicy.ProtectedEntry
		if found, err = b.finder.find(searchContext(ctx, req.Timeout), roots, uidOf(cred)); err != nil {
			return startView{}, err
		}
		if viewBinds(found, held, roots) > maxViewBinds {
			found, v.whole = wholeGitDirs(found, req.Workdir)
		}
		// What was found may vanish before the start with what holds it
		// (a scratch repository removed): the stage accepts that, never
		// the absence of a path a command may not create, nor of one
		// whose holder was moved elsewhere (held from now on, so the
		// stage tells the two apart).
		withPins := slices.Concat(found, pins)
		holder := holders(withPins, reservable)
		if conf.Held, err = subproc.Hold(heldHolders(withPins, holder)); err != nil {
			if errors.Is(err, subproc.ErrHolderChanged) {
				return startView{}, &changedError{err.Error()}
			}
			return startView{}, &exec.Error{Code: exec.CodeUnavailable, Message: err.Error() +
				"; the command was not run rather than run unable to tell a repository removed from one moved", Cause: err}
		}
		releaseAll = func() { subproc.ReleaseAll(held...); conf.Held.Close() }
		// A git directory's missing read-only members, and those another
		// command reserved (their placeholders), are reserved too.
		var kept []*subproc.Reservation
		if held, kept, err = reserveMembers(found, held, &b.kept); err != nil {
			if _, ok := errors.AsType[*changedError](err); ok {
				return startView{}, err
			}
			return startView{}, &exec.Error{Code: exec.CodeUnavailable, Message: err.Error() +
				"; the command was not run rather than run able to create a git hook or config"}
		}
		// A file in the way of a reserved directory (`.config`), and a
		// root that is a host-run directory, are bound read-only as what
		// was found is.
		found = append(found, pins...)
		for _, h := range append(slices.Clone(held), kept...) {
			conf.Reserved = append(conf.Reserved, subproc.Reserved{Path: h.Path, Dir: h.Dir, FIFO: h.FIFO, Holder: holder[h.Path]})
		}
		conf.Protected = bound(found, conf.Reserved, holder)
		v.gitDirs, v.links = gitDirsOf(found), linksOf(found, met, roots)
	}
	if conf.Masked, err = b.masker.find(searchContext(ctx, req.Timeout), policy, cred); err != nil {
		return startView{}, err
	}
	// The named sockets bound into the view, every other socket masked in
	// it (below Landlock ABI 9).
	var sv socketView
	if sv, err = socks(); err != nil {
		return startView{}, err
	}
	conf.UnixSocketPaths, conf.MaskedSockets, conf.SocketSources = sv.named, sv.masked, sv.sources
	if secrets != nil {
		conf.Masked = mergeMasks(conf.Masked, secrets)
	}
	if conf.Masked, conf.Exposed, err = agentView(conf.Masked, cfg.GPGAgent, roots); err != nil {
		return startView{}, err
	}
	if err = unmasked(conf, req.Workdir, accountOf(cred)); err != nil {
		return startView{}, err
	}
	if err = checkWorkdir(req.Workdir, conf); err != nil {
		return startView{}, err
	}
	v.conf, v.release = conf, releaseAll
	if n := subproc.BwrapArgCount(conf); n > subproc.MaxBwrapArgs-argsHeadroom {
		err = tooManyArgs(v, n)
		return startView{}, err
	}
	return v, nil
}

// startAttempts is how many times, in all, a command is started while a
// path of its view changes between the search that found it and the start
// (subproc.Status.Changed): a file a process outside renamed over (git
// rewriting `.git/config`), a directory it removed. Each start searches
// again; the last one's cause is the command's refusal. At 8, one command
// in 150 failed at load 15 beside a host rewriting `.git/config` twice a
// second (each start there took long enough for a rewrite to fall in it
// about every other time); at 24, with the pauses (startBackoff), a command
// keeps trying for some seconds before it is refused.
const startAttempts = 24

// startBackoff bounds the pause before a start made again: a random pause
// up to the attempt's number times it, so the starts do not keep pace with
// a host that rewrites a file at a steady rate.
const startBackoff = 20 * time.Millisecond

// startFresh calls start, which finds a command's view and starts it, again
// while its outcome says a path of the view changed before the start, at
// most startAttempts times in all or until ctx is done, pausing a little
// longer before each (startBackoff), and returns start's last results and
// how many times it was called. Nothing of the command ran in a start
// whose outcome says so (the sandbox's stage reports it before it starts
// the command), so starting again runs it once.
func startFresh(ctx context.Context, start func() (subproc.Outcome, *subproc.Confinement, error)) (subproc.Outcome, *subproc.Confinement, int, error) {
	for tries := 1; ; tries++ {
		out, conf, err := start()
		if err != nil || !out.Status.Changed || tries == startAttempts || ctx.Err() != nil {
			return out, conf, tries, err
		}
		pause := time.NewTimer(rand.N(time.Duration(tries) * startBackoff))
		select {
		case <-pause.C:
		case <-ctx.Done():
			pause.Stop()
			return out, conf, tries, err
		}
	}
}

// bwrapResult maps the last of tries bubblewrap runs of conf with exe to
// the runner's result (see execlocal.Result); err may be the runner's own
// *exec.Error (a search's), returned as it is. A view whose paths changed
// before each start is exec.CodeStartFailed naming the last path. A sandbox
// bubblewrap could not make for another reason is exec.CodeUnavailable
// with bubblewrap's message, and with the remedy (install bubblewrap, allow
// unprivileged user namespaces, or the landlock isolation) only when
// bubblewrap cannot make a sandbox here at all: when a fresh trial of it
// (subproc.ProbeBwrap) fails too, whose message is added. The result's
// Confinement holds only conf's masked paths (the caller fills in the
// rest).
func bwrapResult(out subproc.Outcome, err error, conf *subproc.Confinement, exe *subproc.Program, tries int) (exec.Result, error) {
	if ee, ok := errors.AsType[*exec.Error](err); ok {
		return exec.Result{}, ee
	}
	if err == nil && !out.Status.Started && !out.Status.Stopped {
		switch {
		case out.Status.Changed:
			return exec.Result{}, &exec.Error{Code: exec.CodeStartFailed, Message: fmt.Sprintf(
				"the command did not start: %s (its view was searched for and made %d times, and a path of it had changed each time)", out.Status.Error, tries)}
		case strings.HasPrefix(out.Status.Error, subproc.SandboxNotStarted):
			msg := out.Status.Error + "; the command was not run"
			if perr := subproc.ProbeBwrap(exe); perr != nil {
				msg += fmt.Sprintf(". bubblewrap cannot make a sandbox here (%v%s). Remedy: %s", perr, namespaceCause(procSys), bwrapRemedy)
			}
			return exec.Result{}, &exec.Error{Code: exec.CodeUnavailable, Message: msg}
		}
	}
	res, err := execlocal.Result(out, err)
	if err == nil {
		res.Confinement = &exec.Confinement{Masked: maskedPaths(conf.Masked), Reserved: reservedPaths(conf.Reserved)}
	}
	return res, err
}

// searchContext bounds the protected-path search by the call's context and
// the command's own timeout.
func searchContext(ctx context.Context, timeout time.Duration) context.Context {
	if timeout <= 0 {
		return ctx
	}
	c, cancel := context.WithTimeout(ctx, timeout)
	context.AfterFunc(c, cancel)
	return c
}

// rlimits are the per-process caps of cfg.
func rlimits(cfg Config) subproc.RLimits {
	var l subproc.RLimits
	switch {
	case cfg.Memory == 0:
		l.Data = DefaultMemory
	case cfg.Memory > 0:
		l.Data = uint64(cfg.Memory)
	}
	switch {
	case cfg.Pids == 0:
		l.Procs = DefaultPids
	case cfg.Pids > 0:
		l.Procs = uint64(cfg.Pids)
	}
	return l
}

// reservedIn reserves each path of reservable (sandboxpolicy.Reservable) that is missing
// (subproc.Reserve), appending to held, which the caller releases; one
// beneath a missing directory (`.config/git` in a home without
// `~/.config`) by the highest missing one instead, and returns in pins the
// entries in the way of one that are no directory, and in links the
// symlinks on the way to one (reserveAbove). A root's
// `.git` is a named pipe outside a repository, an empty directory inside
// one (inRepository). A host-run file is reserved as a directory whatever
// it is (an empty directory is invisible to git: `git add -A` does not
// record it), but in a home (home, the command's HOME, and homes: a root
// that is a home directory, or one beneath a root), where a file one is an empty
// read-only file: shells and git read `.bashrc`, `.profile` and
// `.gitconfig` there at every start, and a directory in their place makes
// git fail ("unknown error occurred while reading the configuration
// files") and each shell complain; a start-up file whose presence would
// make a login shell skip the user's real one (.bash_profile,
// .bash_login, .tcshrc) holds what reads that one instead
// (homePlaceholders).
func reservedIn(policy sandbox.ExecutionPolicy, protect sandbox.ProtectedPaths, reservable, homes []string, home string, held []*subproc.Reservation) (_ []*subproc.Reservation, pins []sandboxpolicy.ProtectedEntry, links []string, _ error) {
	hostRun := protect.HostRun()
	files := map[string]string{} // a file placeholder's path: its content
	if c, err := filepath.EvalSymlinks(home); err == nil {
		home = c
	}
	for _, h := range append([]string{home}, homes...) {
		if h == "" {
			continue
		}
		for _, f := range hostRun {
			if !f.Dir {
				p := filepath.Join(filepath.Clean(h), f.Name)
				files[p] = homePlaceholders[f.Name]
				if at, links, err := realpath.Named(p); err == nil && len(links) > 0 {
					files[at] = homePlaceholders[f.Name] // a home's link into a root (sandboxpolicy.Reservable)
				}
			}
		}
	}
	done := map[string]bool{} // the missing directories reserved for a path beneath them, and the entries pinned
	for _, p := range reservable {
		a, err := reserveAbove(policy, p, done, &links)
		h := a.held
		switch content, file := files[p]; {
		case err != nil:
		case a.covered:
			if h != nil {
				done[h.Path] = true
			}
			if a.pin != nil && !done[a.pin.Path] {
				done[a.pin.Path] = true
				pins = append(pins, *a.pin)
			}
		case file:
			h, err = subproc.ReserveFile(a.at, content)
		case filepath.Base(p) == ".git":
			h, err = subproc.ReserveEither(a.at, inRepository(filepath.Dir(a.at)))
		default:
			h, err = subproc.Reserve(a.at, true)
		}
		if err != nil {
			return held, nil, nil, err
		}
		if h != nil {
			held = append(held, h)
		}
	}
	return held, pins, links, nil
}

// hostRunRoots returns the workspace roots of policy that are, or lie
// beneath, a host-run directory (protect.HostRunDirs: a workspace that is
// git's own configuration directory, `~/.config/git`): each is protected
// whole, as the file tools' rule has it, so no command starts there.
func hostRunRoots(policy sandbox.ExecutionPolicy, protect sandbox.ProtectedPaths) []sandboxpolicy.ProtectedEntry {
	var out []sandboxpolicy.ProtectedEntry
	for _, r := range append([]string{policy.WorkspaceRoot}, policy.OtherRoots...) {
		if _, ok := protect.HostRunDir(filepath.Clean(r)); !ok || !sandbox.GrantableRoot(r) {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(r, &st) == nil {
			out = append(out, sandboxpolicy.ProtectedEntry{Path: filepath.Clean(r), Dev: dirfd.Dev(&st), Ino: st.Ino, Dir: true})
		}
	}
	return out
}

// above is what reserveAbove did for a reservable path p.
type above struct {
	// held is the missing directory on p's way it reserved, or nil.
	held *subproc.Reservation
	// covered says p needs nothing more: a directory on its way was
	// reserved (held; or already, in done), one is missing that this
	// server's user cannot make (nor, then, the command), it leads out of
	// the writable roots (read-only in the view), or one is not a
	// directory nor a symlink: then pin is that entry.
	covered bool
	// pin is an entry on p's way to bind read-only: a command could
	// remove it, as it is, and make the directory (the review's `.config`
	// file).
	pin *sandboxpolicy.ProtectedEntry
	// at, when not covered, is where p is reserved: p with each symlink on
	// its way followed (a bind's path must hold none: bubblewrap resolves
	// an absolute link's target against its own root, not the view's, and
	// every command failed beside `~/.config -> /home/u/dotfiles/config`).
	at string
}

// reserveAbove reserves, for p (a reservable path beneath a writable root
// of policy), the highest of its directories beneath that root that is
// missing, or another command's placeholder: an empty read-only directory
// there keeps the command from making it, and so p beneath it (the attack
// review's input: a home without `~/.config`, where a command made
// `.config/git/config` and the host's git ran its core.pager). p's
// directory is first resolved as the host's program resolves it
// (realpath.Named: each symlink on its way read and followed, a magic link
// of /proc by what it names; each added to links), and p reserved where
// it leads: in the root it lands in, or, out of the writable roots, not at
// all (read-only in the view). A directory removed meanwhile is looked at
// again; a link made on the way meanwhile, three times, refuses the
// command. Errors: more than realpath.MaxLinks links on the way (a loop: the
// review's chain of ten past the eight followed before was not reserved),
// a link that cannot be read, a reservation that failed.
func reserveAbove(policy sandbox.ExecutionPolicy, p string, done map[string]bool, links *[]string) (above, error) {
	rootOf := func(p string) string {
		root := ""
		for _, r := range policy.WritableRoots() {
			if dirfd.Beneath(r, p) && len(r) > len(root) {
				root = r
			}
		}
		return root
	}
	if root := rootOf(p); root == "" || filepath.Dir(p) == root {
		return above{at: p}, nil
	}
	for range 3 {
		dir, met, err := realpath.Named(filepath.Dir(p))
		for _, l := range met {
			if !slices.Contains(*links, l) {
				*links = append(*links, l)
			}
		}
		if err != nil {
			return above{}, fmt.Errorf("cannot reserve %s: %w", p, err)
		}
		at := filepath.Join(dir, filepath.Base(p))
		root := rootOf(at)
		if root == "" {
			return above{covered: true}, nil // out of the writable roots: a command makes nothing there
		}
		a, linked, err := reserveBeneath(root, at, done)
		if !linked {
			return a, err
		}
	}
	return above{}, fmt.Errorf("cannot reserve %s: a symlink was made on its way each time it was resolved", p)
}

// reserveBeneath is reserveAbove of at, beneath root, with no symlink on
// its way: it reserves the highest missing directory (covered), pins an
// entry that is no directory, or returns at; linked says a symlink was
// met on the way (made since at was resolved: resolve again).
func reserveBeneath(root, at string, done map[string]bool) (_ above, linked bool, _ error) {
	if filepath.Dir(at) == root {
		return above{at: at}, false, nil
	}
	d := root
next:
	for name := range strings.SplitSeq(strings.TrimPrefix(filepath.Dir(at), root+"/"), "/") {
		d = filepath.Join(d, name)
		if done[d] {
			return above{covered: true}, false, nil
		}
		for range 3 {
			if h, err := subproc.Reserve(d, true); err != nil || h != nil {
				return above{held: h, covered: true}, false, err
			}
			var st unix.Stat_t
			if unix.Lstat(d, &st) != nil {
				continue // not made here (its directory is not this user's to write), or gone meanwhile
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				continue next
			case unix.S_IFLNK:
				return above{}, true, nil
			}
			return above{covered: true, pin: &sandboxpolicy.ProtectedEntry{Path: d, Dev: dirfd.Dev(&st), Ino: st.Ino}}, false, nil
		}
		return above{covered: true}, false, nil // missing, and this server's user cannot make it
	}
	return above{at: at}, false, nil
}

// inRepository reports whether git, started in root, would find a
// repository above it, as git looks (not past a file system's boundary,
// following symlinks): an ancestor holding a `.git` that git takes for one
// (a git directory, or a gitfile: not an empty directory, a pipe, another
// command's placeholder, which git passes over), or root or an ancestor
// that is itself a git directory (a bare repository). Its reserved `.git`
// is then an empty directory, which git passes over on its way up to that
// repository; elsewhere a named pipe (subproc.ReserveEither), which git
// passes over as well and Go does not take for a repository: an empty
// directory there made every `go build` of a module outside git fail to
// stamp its version-control status (issue 34), and an empty file would
// make git itself fail ("invalid gitfile format") in the root, even `git
// clone`. Both hold the name.
func inRepository(root string) bool {
	var rootSt unix.Stat_t
	if unix.Stat(root, &rootSt) != nil {
		return true // the directory placeholder, as before
	}
	for d := root; ; d = filepath.Dir(d) {
		if d != root {
			// git stops at a file system's boundary (unless told
			// otherwise: GIT_DISCOVERY_ACROSS_FILESYSTEM).
			var st unix.Stat_t
			if unix.Stat(d, &st) != nil || st.Dev != rootSt.Dev {
				return false
			}
			dotGit := filepath.Join(d, ".git")
			if fi, err := os.Stat(dotGit); err == nil && (fi.Mode().IsRegular() || fi.IsDir() && protectscan.ShapedRepository(dotGit)) {
				return true
			}
		}
		if protectscan.ShapedRepository(d) {
			return true
		}
		if d == filepath.Dir(d) {
			return false
		}
	}
}

// homePlaceholders are the contents of a home's start-up files' placeholders
// that must not be empty: an empty .bash_profile would make a login bash on
// the host skip ~/.profile while a command runs.
var homePlaceholders = map[string]string{
	".bash_profile": protectscan.BashProfilePlaceholder,
	".bash_login":   protectscan.BashLoginPlaceholder,
	".tcshrc":       protectscan.TcshrcPlaceholder,
}

// holders returns, for each entry of found, its holder
// (subproc.Protected.Holder): a split git directory itself, else the
// nearest split git directory holding the entry (a member's), else the entry
// itself; none ("") when that is one of reservable, which a command may not
// create once it is gone.
func holders(found []sandboxpolicy.ProtectedEntry, reservable []string) map[string]string {
	split := map[string]bool{}
	for _, e := range found {
		if e.Split {
			split[e.Path] = true
		}
	}
	out := make(map[string]string, len(found))
	for _, e := range found {
		h := e.Path
		for d := filepath.Dir(e.Path); !e.Split && d != filepath.Dir(d); d = filepath.Dir(d) {
			if split[d] {
				h = d
				break
			}
		}
		if slices.Contains(reservable, h) {
			h = ""
		}
		out[e.Path] = h
	}
	return out
}

// heldHolders returns the holders of found (holder: holders'), each once,
// with its identity as found; one found missing has none to hold, and
// what it holds, missing from the view, is a change.
func heldHolders(found []sandboxpolicy.ProtectedEntry, holder map[string]string) []subproc.Protected {
	var out []subproc.Protected
	seen := map[string]bool{}
	for _, e := range found {
		if holder[e.Path] == e.Path && !e.Missing && !seen[e.Path] {
			seen[e.Path] = true
			out = append(out, subproc.Protected{Path: e.Path, Dev: e.Dev, Ino: e.Ino})
		}
	}
	return out
}

// reserveMembers reserves each missing read-only member of a split git
// directory among found, and each found entry that is another command's
// placeholder, appending to held; a placeholder with content (a
// `commondir`) is kept by the runner instead (keptReservations), and
// returned in keptHere with those it already kept. Errors: a reservation
// that failed; a member found missing that is there now, neither reserved
// nor protected (*changedError: search again).
func reserveMembers(found []sandboxpolicy.ProtectedEntry, held []*subproc.Reservation, kept *keptReservations) (_, keptHere []*subproc.Reservation, _ error) {
	for _, e := range found {
		if e.Split || slices.ContainsFunc(held, func(h *subproc.Reservation) bool { return h.Path == e.Path }) {
			continue
		}
		keep := !e.Dir && e.Placeholder != ""
		if keep {
			if r := kept.holding(e.Path); r != nil {
				keptHere = append(keptHere, r)
				continue
			}
		}
		var h *subproc.Reservation
		var err error
		if e.Dir {
			h, err = subproc.Reserve(e.Path, true)
		} else {
			h, err = subproc.ReserveFile(e.Path, e.Placeholder)
		}
		if err != nil {
			return held, keptHere, err
		}
		switch {
		case h != nil && keep && kept.keep(h):
			keptHere = append(keptHere, h)
		case h != nil:
			held = append(held, h)
		default:
			if _, err := os.Lstat(e.Path); e.Missing && err == nil {
				return held, keptHere, &changedError{fmt.Sprintf("the protected path %s was made after the search found it missing", e.Path)}
			}
		}
	}
	return held, keptHere, nil
}

// changedError says a path of a command's view changed between the search
// that found it and the reservations, before anything started: as
// subproc.Status.Changed, the view is searched for again.
type changedError struct{ msg string }

func (e *changedError) Error() string { return e.msg }

// bound returns the entries of found bound read-only, with their holders
// (holders') and the git directory found holding each (the nearest split
// one): neither a split git directory (writable, bar its members) nor a
// member missing or reserved.
func bound(found []sandboxpolicy.ProtectedEntry, reserved []subproc.Reserved, holder map[string]string) []subproc.Protected {
	out := make([]subproc.Protected, 0, len(found))
	gitDirs := map[string]sandboxpolicy.ProtectedEntry{}
	for _, e := range found {
		if e.Split {
			gitDirs[e.Path] = e
		}
	}
	for _, e := range found {
		if e.Split || e.Missing || slices.ContainsFunc(reserved, func(r subproc.Reserved) bool { return r.Path == e.Path }) {
			continue
		}
		p := subproc.Protected{Path: e.Path, Dev: e.Dev, Ino: e.Ino, Holder: holder[e.Path]}
		// The nearest git directory found holding it: a file the host
		// renamed over it there is accepted (subproc.Protected.GitDir).
		for d := filepath.Dir(e.Path); len(gitDirs) > 0 && d != filepath.Dir(d); d = filepath.Dir(d) {
			if g, ok := gitDirs[d]; ok {
				p.GitDir, p.GitDirDev, p.GitDirIno = g.Path, g.Dev, g.Ino
				break
			}
		}
		out = append(out, p)
	}
	return out
}

// checkWorkdir refuses a workdir at or beneath a protected or reserved
// path: a command must not start inside what it may not change.
func checkWorkdir(workdir string, c *subproc.Confinement) error {
	wd := sandboxpolicy.CanonicalPath(workdir)
	paths := make([]string, 0, len(c.Reserved)+len(c.Protected))
	for _, p := range c.Reserved {
		paths = append(paths, p.Path)
	}
	for _, p := range c.Protected {
		paths = append(paths, p.Path)
	}
	for _, p := range paths {
		if dirfd.Beneath(p, wd) {
			return &exec.Error{Code: exec.CodeInvalidRequest, Message: fmt.Sprintf(
				"workdir %s is at or beneath the protected path %s; commands do not start there under %s", workdir, p, sandbox.WorkspaceWrite)}
		}
	}
	return nil
}

// uidOf is the uid a command runs as under cred (commandUser's).
func uidOf(cred *syscall.Credential) int {
	if cred != nil {
		return int(cred.Uid)
	}
	return os.Geteuid()
}

// commandUser returns the user a command runs as and its environment. A
// server running as root runs commands as the owner of the policy's
// workspace root (its uid and gid, no supplementary groups, HOME and USER
// from the user database), so nothing they make belongs to root; when that
// owner is root itself, as root inside a user namespace of its own with no
// capability. Otherwise the server's own user.
func commandUser(policy sandbox.ExecutionPolicy, passthrough []string) (*syscall.Credential, []string) {
	getenv := os.Getenv
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		var st syscall.Stat_t
		if policy.WorkspaceRoot != "" && syscall.Stat(policy.WorkspaceRoot, &st) == nil && st.Uid != 0 {
			cred = &syscall.Credential{Uid: st.Uid, Gid: st.Gid, Groups: []uint32{}}
			home, name := "", ""
			if u, err := user.LookupId(strconv.FormatUint(uint64(st.Uid), 10)); err == nil {
				home, name = u.HomeDir, u.Username
			}
			getenv = func(n string) string {
				switch n {
				case "HOME":
					return home
				case "USER":
					return name
				}
				return os.Getenv(n)
			}
		}
	}
	return cred, tempDirEnv(policy, exec.Environ(passthrough, getenv))
}

// tempDirEnv points a command's TMPDIR at its policy's first temp root
// when, under workspace-write, the server's TMPDIR (or /tmp, without one)
// lies in none of them: a session with a temp area of its own (an HTTP
// principal's, sandboxpolicy.SetTempRoots) writes its temporary files
// there, where it may.
func tempDirEnv(policy sandbox.ExecutionPolicy, env []string) []string {
	if policy.Mode != sandbox.WorkspaceWrite || len(policy.TempRoots) == 0 {
		return env
	}
	current, at := "/tmp", -1
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
			current, at = v, i
		}
	}
	for _, r := range policy.TempRoots {
		if dirfd.Beneath(r, current) {
			return env
		}
	}
	if at >= 0 {
		env[at] = "TMPDIR=" + policy.TempRoots[0]
		return env
	}
	return append(env, "TMPDIR="+policy.TempRoots[0])
}

// reservedPaths returns the paths of reserved.
func reservedPaths(reserved []subproc.Reserved) []string {
	out := make([]string, 0, len(reserved))
	for _, r := range reserved {
		out = append(out, r.Path)
	}
	return out
}

// envValue is the value of name in env (NAME=value pairs), "" without one.
func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}
