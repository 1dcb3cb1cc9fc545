package execsandbox

import (
	"fmt"
	"os"
	"os/user"
	"strconv"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
)

// Isolation describes how confined commands run here, for `harness policy`.
type Isolation struct {
	// Kind is IsolationBwrap or IsolationLandlock.
	Kind string `json:"kind"`
	// Bwrap is the bubblewrap executable run by descriptor (IsolationBwrap,
	// when usable).
	Bwrap string `json:"bwrap,omitempty"`
	// Unavailable says why confined commands are refused here ("" when
	// they run).
	Unavailable string `json:"unavailable,omitempty"`
	// Limits says how the memory and process caps are applied.
	Limits string `json:"limits"`
	// RunAs says which user commands run as under the default policy.
	RunAs string `json:"runAs"`
	// NotCovered lists what this isolation does not confine, one line each.
	NotCovered []string `json:"notCovered"`
	// AllowDomains are the names commands reach through the domain proxy
	// under network deny, as the proxy normalized them (lower case,
	// "*.example.com" wildcards); none without it.
	AllowDomains []string `json:"allowDomains,omitempty"`
}

// Isolation reports how confined commands run here. Under IsolationBwrap it
// finds and tries bubblewrap (once per runner), so a missing or unusable
// bwrap is reported with the remedy.
func (r *Runner) Isolation() Isolation {
	l := rlimits(r.cfg)
	iso := Isolation{Kind: r.cfg.Isolation, Limits: describeLimits(l)}
	if r.proxy != nil {
		iso.AllowDomains = r.proxy.Allowed()
	}
	if subproc.Probe().LandlockABI < 1 {
		iso.Unavailable = subproc.ErrNoLandlock.Error()
	}
	if r.bwrap == nil {
		iso.NotCovered = []string{
			"no PID, user, IPC or UTS namespace: a command sees and may signal the server user's other processes outside Landlock's scope, and a root server's commands run as root with every capability",
			"metadata outside the writable roots (chmod, chown, utimes, xattrs) is not protected (Landlock has no right for it)",
			"no fresh /dev: terminals reachable by the server's user are reachable",
			"resource limits are not applied",
			"protected paths are carved out only where the kernel allows a private mount namespace",
		}
		iso.Limits = "none"
		iso.RunAs = fmt.Sprintf("uid %d, the server's own user, with its capabilities", os.Geteuid())
		return iso
	}
	iso.Limits = r.bwrap.limits.describe(r.cfg)
	iso.RunAs = runAs(r.policy.Default())
	exe, err := r.bwrap.exe()
	if err != nil {
		iso.Unavailable = err.Error() + ". Remedy: " + bwrapRemedy
	} else {
		iso.Bwrap = exe.Path()
	}
	iso.NotCovered = []string{
		"reads: a command reads everything the user it runs as can",
		"protected paths created while a command runs (other than a workspace root's top-level .git and host-run files, and a repository's missing config, config.worktree, hooks, info/attributes, objects/info/alternates and commondir, which are reserved)",
		"hard links inside a writable root to files outside it on the same filesystem",
		"CPU time and disk space are not limited",
	}
	if r.proxy != nil {
		iso.NotCovered = append(iso.NotCovered,
			"what a command sends to an allowed host, on any port (the proxy does not look inside tunnels); a host allowed once to one command is reachable by the session's other commands while it runs")
	}
	return iso
}

func describeLimits(l subproc.RLimits) string {
	mem, procs := "no memory cap", "no process cap"
	if l.Data > 0 {
		mem = fmt.Sprintf("memory %d MiB per process (RLIMIT_DATA)", l.Data>>20)
	}
	if l.Procs > 0 {
		procs = fmt.Sprintf("%d processes (RLIMIT_NPROC in the command's user namespace; the kernel does not apply it to commands running as uid 0)", l.Procs)
	}
	return mem + ", " + procs
}

// runAs says which user the commands of policy run as (commandUser).
func runAs(policy sandbox.ExecutionPolicy) string {
	cred, _ := commandUser(policy, nil)
	switch {
	case cred != nil:
		name := ""
		if u, err := user.LookupId(strconv.FormatUint(uint64(cred.Uid), 10)); err == nil {
			name = " (" + u.Username + ")"
		}
		return fmt.Sprintf("uid %d%s, the workspace root's owner, without any capability", cred.Uid, name)
	case os.Geteuid() == 0:
		return "uid 0 in a user namespace of its own, without any capability (the workspace root belongs to root)"
	default:
		return fmt.Sprintf("uid %d, the server's own user, without any capability", os.Geteuid())
	}
}

// confinement reports how a command of policy (read-only or
// workspace-write) was confined, for exec.Result: the configured network
// and Unix sockets; under bubblewrap, the read-only world and the user
// commandUser chose (the workspace owner with its primary group, else the
// server's own uid and groups, without capabilities); under the Landlock
// isolation, the server's own user, with its capabilities when it is root.
func (r *Runner) confinement(policy sandbox.ExecutionPolicy) *exec.Confinement {
	c := &exec.Confinement{Network: r.cfg.Network, UnixSockets: r.cfg.UnixSockets, UID: uint32(os.Geteuid())}
	c.GIDs = append(c.GIDs, uint32(os.Getegid()))
	if groups, err := os.Getgroups(); err == nil {
		for _, g := range groups {
			c.GIDs = append(c.GIDs, uint32(g))
		}
	}
	if r.bwrap == nil {
		c.Capable = os.Geteuid() == 0
		return c
	}
	c.ReadOnlyMounts = true
	if cred, _ := commandUser(policy, nil); cred != nil {
		c.UID, c.GIDs = cred.Uid, []uint32{cred.Gid}
	}
	return c
}
