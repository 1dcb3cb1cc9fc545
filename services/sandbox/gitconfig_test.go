package sandbox_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dsh-go/harness/services/sandbox"
)

func TestGitConfigRuns(t *testing.T) {
	for _, k := range []string{
		"core.fsmonitor", "core.hooksPath", "core.sshcommand", "core.pager", "diff.evil.textconv", "diff.external",
		"filter.lfs.process", "filter.x.smudge", "credential.https://example.com.helper", "include.path",
		"includeif.gitdir:/x/.path", "url.ext::sh -c touch.insteadof", "protocol.ext.allow", "remote.origin.uploadpack",
		"alias.st", "pager.log", "gpg.ssh.program", "submodule.a.b.update", "trace2.eventtarget",
	} {
		assert.True(t, sandbox.GitConfigRuns(k), k)
	}
	for _, k := range []string{
		"core.repositoryformatversion", "core.filemode", "core.bare", "remote.origin.url", "remote.origin.fetch",
		"branch.main.remote", "branch.main.merge", "user.name", "user.email", "init.defaultbranch", "pull.rebase",
		"submodule.a.url", "diff.renames", "core.worktree", "core", "",
	} {
		assert.False(t, sandbox.GitConfigRuns(k), k)
	}
}
