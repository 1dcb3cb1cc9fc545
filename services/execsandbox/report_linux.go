package execsandbox

import (
	"fmt"
	"maps"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-go/harness/internal/gpgagent"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execlocal"
	"github.com/dsh-go/harness/services/sandbox"
)

// Isolation reports how confined commands run here. Under IsolationBwrap it
// finds and tries bubblewrap (once per runner), so a missing or unusable
// bwrap is reported with the remedy.
func (r *Runner) Isolation() Isolation {
	l := rlimits(r.cfg)
	iso := Isolation{Kind: r.cfg.Isolation, Limits: describeLimits(l), Helper: execlocal.HelperKind(r.run)}
	if r.proxy != nil {
		iso.Proxied, iso.AllowDomains = true, r.proxy.Allowed()
		direct := r.proxy.Direct()
		for _, name := range slices.Sorted(maps.Keys(direct)) {
			for _, p := range direct[name] {
				iso.Direct = append(iso.Direct, name+":"+strconv.Itoa(p))
			}
		}
	}
	caps := subproc.Probe()
	if caps.LandlockABI < 1 {
		iso.Unavailable = subproc.ErrNoLandlock.Error()
	}
	iso.NamedSockets = r.describeNamed(caps)
	if a := r.cfg.GPGAgent; a != nil {
		iso.GPGAgent = fmt.Sprintf("the agent's restricted socket %s is bound at %s (it signs and decrypts with the keys the agent holds unlocked, and exports no secret key); "+
			"%s and the socket's directory are masked whole (an empty read-only directory) but for that socket and, bound read-only as found when a command starts, %s", a.ExtraSocket, a.Socket, a.Home, strings.Join(gpgagent.PublicFiles, ", "))
	}
	if r.bwrap == nil {
		iso.NotCovered = []string{
			"no PID, user, IPC or UTS namespace: a command sees and may signal the server user's other processes outside Landlock's scope, and a root server's commands run as root with every capability",
			"metadata outside the writable roots (chmod, chown, utimes, xattrs) is not protected (Landlock has no right for it)",
			"no fresh /dev: the host's devices the server's user may open are reachable; /dev/pts is an empty read-only tmpfs (a command's own terminal bound back) only where the kernel allows a private mount namespace, and otherwise the server user's terminals are reachable too",
			"resource limits are not applied",
			"protected paths are carved out only where the kernel allows a private mount namespace",
			"deny-read paths are hidden by Landlock's read rights (granted around them when a command starts): their contents cannot be read, but the names in a denied directory can be listed, " +
				"and entries made after the start in a directory on a denied path's way (outside the writable roots) cannot be read by that command",
			"a deny-read path inside a writable root (a workspace's .env under workspace-write) cannot be hidden, nor any under danger-full-access, nor any from a root server's commands (root's capabilities read past Landlock): those commands are refused",
		}
		if !r.cfg.UnixSockets && !caps.ResolveUnix {
			iso.NotCovered = append(iso.NotCovered, fmt.Sprintf("a command's own Unix sockets: below Landlock ABI 9 (here %d) there is no view to hide the host's in, so socket(AF_UNIX) fails (--unix-sockets allow opens every socket)", caps.LandlockABI))
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
		"reads: a command reads everything the user it runs as can but the deny-read paths that exist when it starts (masked; an any-depth pattern such as .env is looked for only in the workspace, temp and --writable-root roots)",
		"protected paths created while a command runs (other than a workspace root's top-level .git and host-run files, and a repository's missing config, config.worktree, hooks, info/attributes, objects/info/alternates and commondir, which are reserved)",
		"hard links inside a writable root to files outside it on the same filesystem",
		"CPU time and disk space are not limited",
		"a writable root's own mode, owner and times for an instant: a command that owns the root (its workspace root; the temp roots for a root-owned workspace's) may change them, and the runner puts them back as it sees the change and when the command ends",
		"the descriptions (never the payloads) of the kernel keys the command's user may view, in /proc/keys",
		"git state that runs programs (a rebase todo's exec lines, a merge strategy; a repository it made, with config keys or hooks that run programs) a background command leaves, until it ends: each command's is disarmed when it ends",
		"a program a command puts in a PATH directory inside a writable root, ahead of the real one (harness's own executable included, for a client that starts it by a bare name)",
		"what a git directory's symlinked member (hooks/, info/attributes) leads to when the link is missing its target, passes through another symlink inside a writable root, or names a writable root or a directory holding one (a single link to a real directory or file is protected)",
	}
	if r.bwrap != nil && !r.cfg.UnixSockets && !caps.ResolveUnix {
		iso.NotCovered = append(iso.NotCovered, "Unix sockets besides the named ones and the command's own that are bound after a command starts, by anyone (another session's command, a service, a container); "+
			"outside the command's roots (and other users' directories in a temp root): one bound by a relative path, in a network namespace no process the server sees in /proc is in, "+
			"or in the server's own network namespace by a process of another mount namespace (PrivateTmp=) at a path that names another place here; a socket's other hard links")
	}
	if r.proxy != nil {
		iso.NotCovered = append(iso.NotCovered,
			"what a command sends to an allowed host, on any port (the proxy does not look inside tunnels); a host allowed once to one command is reachable by the session's other commands while it runs")
	}
	return iso
}

// describeNamed says how commands are kept to the named sockets under
// caps, for Isolation.NamedSockets.
func (r *Runner) describeNamed(caps subproc.Capabilities) string {
	switch {
	case len(r.named) == 0:
		return ""
	case r.cfg.UnixSockets && caps.ResolveUnix:
		return fmt.Sprintf("reachable beside the sockets beneath the writable roots, to which Landlock ABI %d limits --unix-sockets allow", caps.LandlockABI)
	case r.cfg.UnixSockets:
		return "no narrowing: --unix-sockets allow makes every Unix socket reachable"
	case caps.ResolveUnix:
		return fmt.Sprintf("kernel-enforced: Landlock ABI %d lets commands connect to these pathname sockets only", caps.LandlockABI)
	case r.bwrap != nil:
		return fmt.Sprintf("masked in the view (Landlock ABI %d cannot scope connects): when a command starts, every other pathname socket bound in any network namespace of a process the server sees (its path read through that process's mounts), "+
			"and every socket file in the command's roots, is hidden under a read-only /dev/null; these are bound at their own path", caps.LandlockABI)
	default:
		return fmt.Sprintf("refused: Landlock ABI %d cannot scope connects and the landlock isolation has no view to mask sockets in, so commands under read-only and workspace-write are refused; "+
			"use --exec-isolation bwrap", caps.LandlockABI)
	}
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
		return "uid 0 in a user namespace of its own, without any capability (the workspace root belongs to root); root's files that others may not read are masked in " +
			strings.Join(systemDirs, ", ") + " (as found when a command starts), not elsewhere: root's home (its credentials are in the deny-read set), " +
			"other filesystems mounted there, temp areas every user writes (/var/tmp), /mnt, /media, /run, /sys, and under --shared-temp root's files in the temp roots stay readable"
	default:
		return fmt.Sprintf("uid %d, the server's own user, without any capability", os.Geteuid())
	}
}

// confinement reports how a command of policy (read-only or
// workspace-write) was confined, for exec.Result: the configured network
// and Unix sockets, the named sockets it was given (named); under bubblewrap, the read-only world and the user
// commandUser chose (the workspace owner with its primary group, else the
// server's own uid and groups, without capabilities); under the Landlock
// isolation, the server's own user, with its capabilities when it is root.
func (r *Runner) confinement(policy sandbox.ExecutionPolicy, named []string) *exec.Confinement {
	c := &exec.Confinement{Network: r.cfg.Network, UnixSockets: r.cfg.UnixSockets, UnixSocketPaths: named, OwnUnixSockets: r.ownSockets()}
	if r.bwrap == nil {
		c.UID, c.GIDs = serverUser()
		c.Capable = os.Geteuid() == 0
		return c
	}
	c.ReadOnlyMounts = true
	c.UID, c.GIDs = viewUser(policy)
	return c
}

// Describe is exec.Describer's: how a command of policy will be
// confined (confinement without the named sockets, which a run finds);
// nil under danger-full-access.
func (r *Runner) Describe(policy sandbox.ExecutionPolicy) *exec.Confinement {
	if policy.Mode == sandbox.DangerFullAccess || !policy.Mode.Valid() {
		return nil
	}
	return r.confinement(policy, nil)
}

// serverUser is the server's effective uid and its groups, the primary
// first.
func serverUser() (uint32, []uint32) {
	gids := []uint32{uint32(os.Getegid())}
	if groups, err := os.Getgroups(); err == nil {
		for _, g := range groups {
			gids = append(gids, uint32(g))
		}
	}
	return uint32(os.Geteuid()), gids
}

// viewUser is the uid and groups a bubblewrap command of policy runs as
// (commandUser's): the workspace owner with its primary group, else the
// server's own.
func viewUser(policy sandbox.ExecutionPolicy) (uint32, []uint32) {
	if cred, _ := commandUser(policy, nil); cred != nil {
		return cred.Uid, []uint32{cred.Gid}
	}
	return serverUser()
}
