package execsandbox

import (
	"fmt"

	"github.com/dsh-go/harness/internal/subproc"
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
	// NotCovered lists what this isolation does not confine, one line each.
	NotCovered []string `json:"notCovered"`
}

// Isolation reports how confined commands run here. Under IsolationBwrap it
// finds and tries bubblewrap (once per runner), so a missing or unusable
// bwrap is reported with the remedy.
func (r *Runner) Isolation() Isolation {
	l := rlimits(r.cfg)
	iso := Isolation{Kind: r.cfg.Isolation, Limits: describeLimits(l)}
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
		return iso
	}
	iso.Limits = r.bwrap.limits.describe(r.cfg)
	exe, err := r.bwrap.exe()
	if err != nil {
		iso.Unavailable = err.Error() + ". Remedy: " + bwrapRemedy
	} else {
		iso.Bwrap = exe.Path()
	}
	iso.NotCovered = []string{
		"reads: a command reads everything the user it runs as can",
		"protected paths created while a command runs (other than a workspace root's top-level .git, which is reserved)",
		"hard links inside a writable root to files outside it on the same filesystem",
		"CPU time and disk space are not limited",
	}
	return iso
}

func describeLimits(l subproc.RLimits) string {
	mem, procs := "no memory cap", "no process cap"
	if l.Data > 0 {
		mem = fmt.Sprintf("memory %d MiB per process (RLIMIT_DATA)", l.Data>>20)
	}
	if l.Procs > 0 {
		procs = fmt.Sprintf("%d processes (RLIMIT_NPROC in the command's user namespace; not applied to uid 0)", l.Procs)
	}
	return mem + ", " + procs
}
