package toolexec

import (
	"context"
	"slices"
	"time"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// recordCommand starts the command of an exec call's audit record: its
// command line (redacted and cut, commandLine), whether it runs in the background, and
// Journal: audit.NotJournaled. A journal of commands replaces Journal with
// its entry while the command runs; nothing here overwrites it later.
func recordCommand(ctx context.Context, a call) {
	audit.FromContext(ctx).Update(func(r *audit.Record) {
		r.Command = &audit.Command{Line: commandLine(a.command), Background: a.background, Journal: audit.NotJournaled}
	})
}

// recordWorkdir adds the canonical directory the command runs in.
func recordWorkdir(ctx context.Context, dir string) {
	audit.FromContext(ctx).Update(func(r *audit.Record) {
		if r.Command != nil {
			r.Command.Workdir = dir
		}
	})
}

// recordRun adds how a foreground command ended: its exit code, or the
// signal that ended it; the bytes it wrote to stdout and stderr (all of
// them, not only what the result kept); the network hosts the call was
// allowed (allowed) and those the domain proxy refused it, each once (the
// record keeps the first audit.MaxList and counts the rest); and
// the denial marker the result carries ("" for none), as the denial
// inferred from its output.
func recordRun(ctx context.Context, res exec.Result, allowed []string, marker string) {
	audit.FromContext(ctx).Update(func(r *audit.Record) {
		if r.Command == nil {
			return
		}
		c := r.Command
		if res.Signal != "" {
			c.Signal = res.Signal
		} else {
			code := res.ExitCode
			c.Exit = &code
		}
		c.Stdout, c.Stderr = res.Stdout.Bytes, res.Stderr.Bytes
		c.StartMS, c.RunMS = millis(res.Start), millis(res.Duration)
		c.HostsAllowed = allowed
		if res.Confinement != nil {
			// Refused lists each host once already (exec.Confinement);
			// the record keeps its first audit.MaxList (audit.Bound).
			for _, h := range res.Confinement.Refused {
				c.HostsRefused = append(c.HostsRefused, h.Host)
			}
			c.HostsRefusedMore = res.Confinement.RefusedMore
		}
		if marker != "" {
			c.Denials = append(c.Denials, marker)
		}
	})
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// allowedHosts returns the network hosts a command of sess may reach by
// the user's grant, beyond the configured names (--allow-domain, which is
// policy): those allowed to this command alone (req.AllowHosts) and the
// session's grants; none when the runner has no domain proxy.
func (t *Tool) allowedHosts(sess *session.Session, req exec.Request) []string {
	if !t.g.Confines() || req.Policy == nil {
		return nil
	}
	if hg, ok := t.deps.Runner.(exec.HostGranter); !ok || !hg.GrantsHosts() {
		return nil
	}
	out := slices.Clone(req.AllowHosts)
	for _, h := range sandboxpolicy.GrantedHosts(sess) {
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// commandLine returns line as a record keeps it: credential-looking
// values redacted (audit.RedactCommand), then cut to audit.MaxCommandLine
// bytes (audit.Cut).
func commandLine(line string) string {
	return audit.Cut(audit.RedactCommand(line), audit.MaxCommandLine)
}
