package toolexec

import (
	"context"
	"slices"

	"go.uber.org/zap"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/cmdjournal"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// journalRoots are the roots a command's snapshot covers: its writable
// workspace roots (the workspace root and the session's other roots; not
// the temp areas nor --writable-root) under workspace-write and
// danger-full-access, none under read-only (it writes nothing); under a
// runner that does not confine, the workspace root.
func journalRoots(workspace string, p *sandbox.ExecutionPolicy) []string {
	var roots []string
	if p == nil {
		roots = []string{sandboxpolicy.CanonicalPath(workspace)}
	} else if p.Mode != sandbox.ReadOnly {
		roots = append([]string{p.WorkspaceRoot}, p.OtherRoots...)
	}
	return slices.DeleteFunc(slices.Compact(roots), func(r string) bool { return !sandbox.GrantableRoot(r) })
}

// snapshot snapshots req's roots before it runs when --journal-commands is
// on; nil when it is off, when there is nothing to cover, or when the
// snapshot failed (the record says so, and the command runs unjournaled).
func (t *Tool) snapshot(ctx context.Context, workspace string, req exec.Request) *cmdjournal.Snapshot {
	if t.deps.Commands == nil {
		return nil
	}
	roots := journalRoots(workspace, req.Policy)
	if len(roots) == 0 {
		setJournal(ctx, audit.NotJournaled+": read-only, the command writes nothing")
		return nil
	}
	snap, err := t.deps.Commands.Begin(audit.FromContext(ctx).Record().Session, roots)
	if err != nil {
		t.log.Warn("command snapshot failed: the command runs unjournaled", zap.Error(err))
		setJournal(ctx, audit.NotJournaled+": the snapshot failed: "+err.Error())
		return nil
	}
	return snap
}

// journal records what the command snapped changed, once it ended, and
// sets the call's Command.Journal to the entry (or why there is none).
// rec is the call's record as it stood when the command started.
func (t *Tool) journal(ctx context.Context, snap *cmdjournal.Snapshot, rec audit.Record) {
	if snap == nil {
		return
	}
	res, err := snap.End(cmdjournal.Call{Session: rec.Session, Client: rec.Client, Call: rec.Call})
	if err != nil {
		t.log.Warn("command journal failed: what the command changed is not journaled", zap.Error(err))
		setJournal(ctx, audit.NotJournaled+": "+err.Error())
		return
	}
	if res.Entry.ID != "" {
		t.log.Debug("command journaled", zap.String("entry", res.Entry.ID), zap.Int("paths", len(res.Entry.Paths)))
	}
	setJournal(ctx, cmdjournal.Describe(res))
}

// setJournal sets the call's Command.Journal.
func setJournal(ctx context.Context, s string) {
	audit.FromContext(ctx).Update(func(r *audit.Record) {
		if r.Command == nil {
			r.Command = &audit.Command{}
		}
		r.Command.Journal = s
	})
}
