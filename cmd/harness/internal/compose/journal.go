package compose

import (
	"context"
	"sync"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/journal"
	"github.com/dsh-go/harness/services/metrics"
)

// Unavailable says why a best-effort default the process runs without is
// off: the journal and the default audit log live in the state directory
// (config.StateDir), which a server whose home is missing or read-only (a
// container, a systemd service, uid 65534 with HOME=/nonexistent) cannot
// make. The server logs each reason once at warn and serves; `harness
// policy` prints them. A path the user named (--audit-log FILE) is never
// a default: one that cannot be used stops the start.
type Unavailable struct {
	mu       sync.Mutex
	journal  string
	auditLog string
}

// Journal is why the journal is off although --journal-max-bytes is not 0,
// "" when it is on or turned off.
func (u *Unavailable) Journal() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.journal
}

// AuditLog is why the default audit log is off, "" when it is on or off by
// choice.
func (u *Unavailable) AuditLog() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.auditLog
}

func (u *Unavailable) set(field *string, why string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	*field = why
}

// journalOptions provides the backend's fslocal.Config with the journal of
// cfg (issue 25): with cfg.JournalMaxBytes > 0 the journal in harness's
// state directory (journal.DefaultDir), synced before each change when
// cfg.Durability is full, provided as *journal.Journal too and closed when
// the app stops; with 0, none (a consumer takes it `optional:"true"`).
// Only its directory and lock file are opened while the graph is built:
// the rest (the newest segment, its torn tail, the cap) is read in the
// background once the app starts, so the first answer does not wait for
// it, and a change made meanwhile waits for it in its own Prepare. The
// directory is never named by the user, so it is a best-effort default:
// when it cannot be made or opened the journal is nil, the reason is
// logged once at warn and kept in *Unavailable, and the server serves
// without undo. With metrics, its size and dropped entries are exported.
func journalOptions(cfg config.Config, base fslocal.Config) fx.Option {
	if cfg.JournalMaxBytes == 0 {
		return fx.Supply(base)
	}
	return fx.Options(
		fx.Provide(func(in journalIn) *journal.Journal {
			lc, log, off := in.Lifecycle, in.Logger, in.Off
			dir, err := journal.DefaultDir()
			var j *journal.Journal
			if err == nil {
				j, err = journal.OpenDir(journal.Options{
					Dir: dir, MaxBytes: cfg.JournalMaxBytes, Sync: cfg.Durability != string(fslocal.DurabilityAtomic), Log: log.Named("journal"),
				})
			}
			if err != nil {
				why := err.Error() + ": changes cannot be undone (--journal-max-bytes 0 turns the journal off without this warning)"
				off.set(&off.journal, why)
				log.Warn("journal off: " + why)
				return nil
			}
			if in.Metrics != nil {
				in.Metrics.Journal(func() (int64, int64) { st := j.Stats(); return st.Bytes, st.Dropped })
			}
			done := make(chan struct{})
			lc.Append(fx.Hook{
				OnStart: func(context.Context) error {
					go func() {
						defer close(done)
						if err := j.Prepare(""); err != nil {
							log.Warn("journal: cannot open it yet (each change tries again)", zap.Error(err))
						}
					}()
					return nil
				},
				OnStop: func(context.Context) error {
					<-done
					return j.Close()
				},
			})
			return j
		}),
		fx.Provide(func(j *journal.Journal) fslocal.Config {
			base.Journal = j
			return base
		}),
	)
}

// journalIn is what the journal's provider takes.
type journalIn struct {
	fx.In

	Lifecycle fx.Lifecycle
	Logger    *zap.Logger
	Off       *Unavailable
	Metrics   *metrics.Metrics `optional:"true"`
}
