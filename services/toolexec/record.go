package toolexec

import (
	"context"
	"slices"
	"unicode/utf8"

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
// allowed (allowed) and those the domain proxy refused it, each once; and
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
		c.HostsAllowed = allowed
		if res.Confinement != nil {
			for _, h := range res.Confinement.Refused {
				if !slices.Contains(c.HostsRefused, h.Host) {
					c.HostsRefused = append(c.HostsRefused, h.Host)
				}
			}
		}
		if marker != "" {
			c.Denials = append(c.Denials, marker)
		}
	})
}

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

// ellipsis ends a command line cut to audit.MaxCommandLine bytes.
const ellipsis = "…"

// commandLine returns line as a record keeps it: credential-looking
// values redacted (audit.RedactCommand), then whole when it fits
// audit.MaxCommandLine bytes, else cut on a character boundary so that,
// with the ellipsis that ends it, it is at most that long.
func commandLine(line string) string {
	line = audit.RedactCommand(line)
	if len(line) <= audit.MaxCommandLine {
		return line
	}
	cut := audit.MaxCommandLine - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut] + ellipsis
}
