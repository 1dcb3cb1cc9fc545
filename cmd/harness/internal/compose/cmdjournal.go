package compose

import (
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
func journalCommands(cfg config.Config) fx.Option {
	if !cfg.JournalCommands {
		return fx.Options()
	}
	return fx.Provide(func(j *journal.Journal, pol *sandboxpolicy.Service, log *zap.Logger) (*cmdjournal.Journaler, error) {
		return cmdjournal.New(cmdjournal.Options{Journal: j, DenyRead: pol.DenyRead(), Logger: log})
	})
}
