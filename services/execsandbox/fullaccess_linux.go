package execsandbox

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execlocal"
	"github.com/dsh-go/harness/services/sandbox"
)

// runFullAccess runs a danger-full-access command (issue 24). Deny-read
// holds there too, so under the bubblewrap isolation it runs in bubblewrap
// with the whole filesystem read-write, the host's network, the Unix
// sockets of the other modes (only the named ones unless Config.UnixSockets:
// Runner.sockets), no resource caps, but a fresh /dev and /proc in its own PID
// namespace (a host process's /proc/PID/root would reach past the masks),
// no capabilities, as the user commandUser picks (a root server's: the
// workspace owner), with every deny-read path masked but the ones the user
// approved this one command to read (req.LiftedReads: see liftMasks). It
// runs unconfined, as before deny-read, only when the deny-read set is
// empty. Under IsolationLandlock, which has no Landlock domain for this
// mode, it runs unconfined when no deny-read path but the approved ones exists where
// it could see it and is refused otherwise (refuseUnmasked).
func (r *Runner) runFullAccess(ctx context.Context, req exec.Request) (exec.Result, error) {
	if r.policy.DenyRead().Empty() {
		return execlocal.RunSpec(ctx, r.helper, r.run, req, nil, nil)
	}
	if why := r.cannotMask(); why != "" {
		if err := r.refuseUnmasked(ctx, req, why); err != nil {
			return exec.Result{}, err
		}
		return execlocal.RunSpec(ctx, r.helper, r.run, req, nil, nil)
	}
	// The same Unix-socket rule as the other modes: with deny-read on, a
	// user daemon's socket (tmux, systemd, docker) would read the masked
	// paths for the command.
	socks, err := r.sockets(ctx, *req.Policy, req.Timeout)
	if err != nil {
		return exec.Result{}, err
	}
	res, err := r.bwrap.runFull(ctx, r.cfg, r.run, req, socks)
	if err == nil {
		c := &exec.Confinement{Network: true, UnixSockets: r.cfg.UnixSockets, UnixSocketPaths: socks.named, OwnUnixSockets: !r.cfg.UnixSockets, Masked: res.Confinement.Masked}
		cred, _ := commandUser(*req.Policy, nil)
		c.UID, c.GIDs = uint32(os.Geteuid()), []uint32{uint32(os.Getegid())}
		if cred != nil {
			c.UID, c.GIDs = cred.Uid, []uint32{cred.Gid}
		}
		res.Confinement = c
	}
	return res, err
}

// cannotMask says why a danger-full-access command cannot run with masks
// here ("" when it can): IsolationLandlock, bubblewrap missing or unable
// to start, Landlock missing (the inner stage needs it).
func (r *Runner) cannotMask() string {
	if r.bwrap == nil {
		return "--exec-isolation " + IsolationLandlock + " runs " + string(sandbox.DangerFullAccess) + " commands without the Landlock domain that hides them in the other modes"
	}
	if _, err := r.bwrap.exe(); err != nil {
		return "bubblewrap, which hides them, is unusable here (" + err.Error() + ")"
	}
	if subproc.Probe().LandlockABI < 1 {
		return "the sandbox that hides them is unavailable here (" + subproc.ErrNoLandlock.Error() + ")"
	}
	return ""
}

// runFull runs req (danger-full-access) in bubblewrap with `/` read-write
// and the deny-read paths masked but req.LiftedReads (see runFullAccess),
// every Unix socket reachable when cfg.UnixSockets, else only socks.named
// (socks.masked masked). The masks are found afresh for each start, and the
// command started again while a path of them changes before it starts
// (startFresh).
func (b *bwrapIsolation) runFull(ctx context.Context, cfg Config, run exec.Config, req exec.Request, socks socketView) (exec.Result, error) {
	exe, err := b.exe()
	if err != nil {
		return exec.Result{}, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
			"sandbox mode %q is unavailable: %v; deny-read holds under it, so the command was not run. Remedy: %s", req.Policy.Mode, err, bwrapRemedy)}
	}
	policy := *req.Policy
	cred, env := commandUser(policy, run.Env)
	stage, err := b.stage()
	if err != nil {
		return exec.Result{}, err
	}
	out, conf, tries, err := startFresh(ctx, func() (subproc.Outcome, *subproc.Confinement, error) {
		conf := &subproc.Confinement{
			WritableRoots: []string{"/"}, Network: true, FullAccess: true,
			UnixSockets: cfg.UnixSockets, UnixSocketPaths: socks.named, MaskedSockets: socks.masked, SocketSources: socks.sources,
			OwnUnixSockets: !cfg.UnixSockets,
		}
		var err error
		if conf.Masked, err = b.masker.find(searchContext(ctx, req.Timeout), policy, cred); err != nil {
			return subproc.Outcome{}, nil, err
		}
		if conf.Masked, err = liftMasks(conf.Masked, req.LiftedReads, accountOf(cred)); err != nil {
			return subproc.Outcome{}, nil, err
		}
		if conf.Masked, conf.Exposed, err = agentView(conf.Masked, cfg.GPGAgent, nil); err != nil {
			return subproc.Outcome{}, nil, err
		}
		if err := unmasked(conf, req.Workdir, accountOf(cred)); err != nil {
			return subproc.Outcome{}, nil, err
		}
		out, err := subproc.RunBwrap(ctx, subproc.Bwrap{Exe: exe, Stage: stage, Credential: cred}, subproc.Spec{
			Command: req.Command, Dir: req.Workdir, Env: env, Confine: conf,
		}, req.Timeout, run.OutputLimit, nil, execlocal.Watch(req))
		return out, conf, err
	})
	return bwrapResult(out, err, conf, exe, tries)
}

// refuseUnmasked refuses a command that cannot run with the deny-read
// paths hidden (why says why: IsolationLandlock under danger-full-access,
// or for a root server; bubblewrap unusable, for danger-full-access) when
// a path of the
// deny-read set exists where it could read it (fail closed, as it is for
// protected paths that cannot be carved out). Under danger-full-access
// the paths req.LiftedReads approves do not count (liftMasks, whose errors
// it returns). Errors: *exec.Error with CodeUnavailable naming up to three
// such paths and the remedies; the search's own error.
func (r *Runner) refuseUnmasked(ctx context.Context, req exec.Request, why string) error {
	masks, err := r.masker.findHost(searchContext(ctx, req.Timeout), *req.Policy, nil)
	if err != nil || len(masks) == 0 {
		return err
	}
	if req.Policy.Mode == sandbox.DangerFullAccess {
		if masks, err = liftMasks(masks, req.LiftedReads, accountOf(nil)); err != nil || len(masks) == 0 {
			return err
		}
	}
	return refuseMasks(maskedPaths(masks), why)
}

// refuseMasks is the refusal of a command that cannot run with the
// deny-read paths names (at least one) hidden, why saying why: an
// *exec.Error with CodeUnavailable naming up to three of them and the
// remedies.
func refuseMasks(names []string, why string) error {
	return &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
		"the deny-read set names paths that exist (%s) and %s; the command was not run. "+
			"Remedy: run commands with the default bubblewrap isolation (--exec-isolation %s, bubblewrap installed), or drop those patterns with --allow-read if commands may read them",
		upToThree(names), why, IsolationBwrap)}
}

// upToThree joins the first three of names, saying how many more there are.
func upToThree(names []string) string {
	if len(names) > 3 {
		return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more", len(names)-3)
	}
	return strings.Join(names, ", ")
}

// maskedPaths returns the paths of masks (nil for none).
func maskedPaths(masks []subproc.Masked) []string {
	var out []string
	for _, m := range masks {
		out = append(out, m.Path)
	}
	return out
}

// readDenied returns the deny-read paths that exist where a command of req
// could read them (masker.find), for the Landlock isolation to hide
// (subproc.Confinement.ReadDenied: its domain grants reads around them).
// Errors: the search's own; refuseMasks's for a root server (its
// commands keep capabilities that read past Landlock, searched once); *exec.Error with
// CodeUnavailable when one lies
// at or beneath a writable root of roots, or holds one (Landlock grants a
// writable root's reads whole), naming up to three such paths and the
// remedies; the command is not run.
func (r *Runner) readDenied(ctx context.Context, req exec.Request, roots []string) ([]string, error) {
	masks, err := r.masker.findHost(searchContext(ctx, req.Timeout), *req.Policy, nil)
	if err != nil {
		return nil, err
	}
	var denied, inside []string
	for _, m := range masks {
		denied = append(denied, m.Path)
		// /proc's entries come and go with every process: reads around
		// a path there cannot be granted ahead.
		if dirfd.Beneath("/proc", m.Path) || slices.ContainsFunc(roots, func(root string) bool { return dirfd.Beneath(root, m.Path) || dirfd.Beneath(m.Path, root) }) {
			inside = append(inside, m.Path)
		}
	}
	if len(denied) > 0 && os.Geteuid() == 0 {
		return nil, refuseMasks(denied, "a root server's commands under --exec-isolation "+IsolationLandlock+
			" keep root's capabilities, which read past Landlock (a device made and read raw, kernel memory)")
	}
	if len(inside) == 0 {
		return denied, nil
	}
	return nil, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
		"the deny-read set names paths inside a writable root or /proc (%s), which --exec-isolation %s cannot hide (Landlock grants a writable root's reads whole, and /proc's entries come and go with each process); the command was not run. "+
			"Remedy: run commands with the default bubblewrap isolation (--exec-isolation %s, bubblewrap installed), or drop those patterns with --allow-read if commands may read them",
		upToThree(inside), IsolationLandlock, IsolationBwrap)}
}
