package compose

import (
	"fmt"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/services/cmdjournal"
	"github.com/dsh-go/harness/services/journal"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// journalCommands provides, with cfg.JournalCommands, the exec tool's
// *cmdjournal.Journaler on the journal, reading nothing the policy's
// deny-read set denies; without it, nothing (toolexec takes it optional).
// With the journal unavailable (Unavailable.Journal) it is an error: the
// user asked for what cannot be kept.
func journalCommands(cfg config.Config) fx.Option {
	if !cfg.JournalCommands {
		return fx.Options()
	}
	return fx.Provide(func(j *journal.Journal, pol *sandboxpolicy.Service, log *zap.Logger, off *Unavailable) (*cmdjournal.Journaler, error) {
		if j == nil {
			return nil, fmt.Errorf("--journal-commands: the journal is off: %s", off.Journal())
		}
		return cmdjournal.New(cmdjournal.Options{Journal: j, DenyRead: pol.DenyRead(), Logger: log})
	})
}
