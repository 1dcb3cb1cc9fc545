package compose

import (
	"context"
	"fmt"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/journal"
)

// journalOptions provides the backend's fslocal.Config with the journal of
// cfg (issue 25): with cfg.JournalMaxBytes > 0 the journal in harness's
// state directory (journal.DefaultDir), synced before each change when
// cfg.Durability is full, provided as *journal.Journal too and closed when
// the app stops; with 0, none (a consumer takes it `optional:"true"`).
func journalOptions(cfg config.Config, base fslocal.Config) fx.Option {
	if cfg.JournalMaxBytes == 0 {
		return fx.Supply(base)
	}
	return fx.Options(
		fx.Provide(func(lc fx.Lifecycle, log *zap.Logger) (*journal.Journal, error) {
			dir, err := journal.DefaultDir()
			if err != nil {
				return nil, fmt.Errorf("--journal-max-bytes: %w (--journal-max-bytes 0 turns the journal off)", err)
			}
			j, err := journal.Open(journal.Options{
				Dir: dir, MaxBytes: cfg.JournalMaxBytes, Sync: cfg.Durability != string(fslocal.DurabilityAtomic), Log: log.Named("journal"),
			})
			if err != nil {
				return nil, fmt.Errorf("--journal-max-bytes: %w (--journal-max-bytes 0 turns the journal off)", err)
			}
			lc.Append(fx.StopHook(func(context.Context) error { return j.Close() }))
			return j, nil
		}),
		fx.Provide(func(j *journal.Journal) fslocal.Config {
			base.Journal = j
			return base
		}),
	)
}
