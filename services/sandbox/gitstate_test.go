package sandbox_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandbox"
)

// gitRunState returns the GitRunStates entry at path.
func gitRunState(t *testing.T, path string) sandbox.GitRunState {
	t.Helper()
	for _, s := range sandbox.GitRunStates() {
		if s.Path == path {
			return s
		}
	}
	require.Failf(t, "no such state", "%s", path)
	return sandbox.GitRunState{}
}

// TestGitRunStateArms (issue 35): what in each state file makes git run a
// program, as git's parser reads it (exec or x first, after blanks, ended
// by a blank or a carriage return; a strategy not git's own; an
// options.strategy entry, its section on the same line or not), and what
// does not (git's own todo commands, strategies and options).
func TestGitRunStateArms(t *testing.T) {
	todo := gitRunState(t, "rebase-merge/git-rebase-todo")
	seqTodo := gitRunState(t, "sequencer/todo")
	strategy := gitRunState(t, "rebase-merge/strategy")
	opts := gitRunState(t, "sequencer/opts")
	for _, c := range []struct {
		state   sandbox.GitRunState
		content string
		arms    bool
	}{
		{todo, "pick 1234 a\nexec touch /tmp/x\n", true},
		{todo, "\t  x touch /tmp/x\r\n", true},
		{todo, "x\n", true},
		{todo, "exec\tmake", true},
		{seqTodo, "pick 1234 a\nexec make\n", true},
		{todo, "pick 1234 a\nbreak\nedit 1234 b\n# exec in a comment\nlabel onto\nreset onto\nmerge -C 1 x\n", false},
		{todo, "execute\nxx y\nfixup -C 1234\n", false},
		{strategy, "evil\n", true},
		{strategy, "../../bin/x\n", true},
		{strategy, "ort \n", true},
		{strategy, "\n", true},
		{strategy, "ort\n", false},
		{strategy, "recursive\n", false},
		{strategy, "octopus", false},
		{opts, "[options]\n\tstrategy = evil\n", true},
		{opts, "[options] strategy = evil\n", true},
		{opts, "[OPTIONS]\n\tSTRATEGY=evil\n", true},
		{opts, "[options]\n\tstrategy = \"ort\" ; comment\n", true},
		{opts, "[options]\n\tstrategy = ort\n\tstrategy-option = theirs\n\tmainline = 1\n", false},
		{opts, "[options]\n\tstrategy = \"subtree\"\n", false},
	} {
		_, arms := c.state.Arms([]byte(c.content))
		assert.Equal(t, c.arms, arms, "%s: %q", c.state.Path, c.content)
	}

	out, ok := todo.Disarm([]byte("pick 1 a\n  exec touch /tmp/x\nx y\nbreak\n"))
	require.True(t, ok)
	assert.Equal(t, "pick 1 a\n# disarmed by harness: exec touch /tmp/x\n# disarmed by harness: x y\nbreak\n", string(out))
	_, arms := todo.Arms(out)
	assert.False(t, arms)
	_, ok = strategy.Disarm([]byte("evil\n"))
	assert.False(t, ok, "a strategy file is removed, not rewritten")
}

// TestGitRunMember (issue 35): the file tools' rule covers each state file
// and each directory on the way to one, in the main git directory, a
// linked worktree's and a submodule's (its name holding slashes), and
// nothing else of rebase-merge/ or sequencer/.
func TestGitRunMember(t *testing.T) {
	for _, c := range []struct {
		member string
		ok     bool
	}{
		{"rebase-merge", true},
		{"rebase-merge/git-rebase-todo", true},
		{"rebase-merge/strategy", true},
		{"sequencer", true},
		{"sequencer/opts", true},
		{"sequencer/todo", true},
		{"worktrees/wt", true},
		{"worktrees/wt/rebase-merge/git-rebase-todo", true},
		{"modules/lib", true},
		{"modules/a/b/sequencer/opts", true},
		{"rebase-merge/done", false},
		{"rebase-merge/message", false},
		{"sequencer/head", false},
		{"rebase-apply/patch", false},
		{"worktrees", false},
		{"worktrees/wt/index", false},
		{"index", false},
		{"refs/heads/rebase-merge", false},
	} {
		_, ok := sandbox.GitRunMember(strings.Split(c.member, "/"))
		assert.Equal(t, c.ok, ok, c.member)
	}
}
