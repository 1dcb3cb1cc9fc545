package sandbox

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
)

// GitRunState is one file of a git operation in progress (a rebase, a
// cherry-pick, a revert) that the user's git reads a program to run from
// when it goes on with that operation (`git rebase --continue`, `git
// cherry-pick --continue`, ...). Under VCSCommit such files are writable to
// commands, since `git rebase`, `cherry-pick` and `revert` run inside the
// sandbox write them; what a command leaves in them is checked when it ends
// (Arms) and disarmed, and the file tools do not write them (GitRunMember).
type GitRunState struct {
	// Path is the file relative to a git directory (a main one, a linked
	// worktree's `worktrees/<id>`, a submodule's `modules/<name>`), with
	// slashes: "rebase-merge/git-rebase-todo".
	Path string
	// Runs says what git runs from it, for the report.
	Runs string
	// Todo says Arms looks for `exec` lines (else for a merge strategy).
	Todo bool
}

// GitRunStates returns the state files git reads programs from, from
// gitRunTable. Read from git's source (sequencer.c, builtin/rebase.c,
// builtin/am.c, builtin/bisect.c; git 2.5x):
//   - rebase-merge/git-rebase-todo: each `exec` or `x` line is run by the
//     shell when the rebase goes on (do_exec);
//   - rebase-merge/strategy: a strategy other than git's own (ort,
//     recursive, resolve, octopus, ours, subtree) runs `git merge-<name>`,
//     a program found on PATH or, when the name holds a slash, at that path
//     (try_merge_command, do_merge);
//   - sequencer/opts: its options.strategy, likewise, for a cherry-pick or
//     revert of several commits;
//   - sequencer/todo: git accepts only pick or revert lines there today; an
//     `exec` line is disarmed all the same.
//
// Read and found to run nothing of their own: the rest of rebase-merge/
// (author-script is parsed for three GIT_AUTHOR_* values, not sourced;
// gpg_sign_opt names a key for the configured signing program; autostash
// an object; strategy_opts and trailer are arguments), rebase-apply/ (am's
// apply-opt is options of `git apply`, none of which runs a program;
// final-commit is edited with the configured editor), sequencer/head and
// abort-safety, the BISECT_* files (`git bisect run` is not resumed from
// them), MERGE_*, CHERRY_PICK_HEAD, REVERT_HEAD. The editor, pager,
// hooks, filters and helpers git runs come from its config and hooks/,
// which stay read-only (GitMember).
func GitRunStates() []GitRunState { return slices.Clone(gitRunTable) }

// gitRunTable is the list GitRunStates returns: add a state file here.
var gitRunTable = []GitRunState{
	{Path: "rebase-merge/git-rebase-todo", Runs: "the rebase todo's exec lines", Todo: true},
	{Path: "rebase-merge/strategy", Runs: "a merge strategy program (git merge-<name>)"},
	{Path: "sequencer/opts", Runs: "a merge strategy program (git merge-<name>)"},
	{Path: "sequencer/todo", Runs: "the sequencer todo's exec lines", Todo: true},
}

// gitStrategies are the merge strategies git carries itself: any other
// name runs a program `git merge-<name>`.
var gitStrategies = []string{"ort", "recursive", "resolve", "octopus", "ours", "subtree"}

// strategyKey finds an options.strategy entry in a sequencer/opts file
// (git config syntax: the key may follow its section header on one line,
// any case); strategy-option entries are arguments and do not match.
var strategyKey = regexp.MustCompile(`(?i)(?:^|[\s\]])strategy[ \t]*(?:=(.*)|$)`)

// Arms reports whether content, the file's bytes, makes git run a program
// and says which line or value does: for a todo, a line whose first word
// (after spaces and tabs) is `exec` or `x`, whatever git's comment
// character; for a strategy file, any content but one of git's own
// strategies (and a newline); for sequencer/opts, any strategy entry whose
// value is not one of them. It decides conservatively: what git would
// refuse to parse may still count.
func (s GitRunState) Arms(content []byte) (string, bool) {
	switch {
	case s.Todo:
		for line := range bytes.SplitSeq(content, []byte("\n")) {
			if todoExec(line) {
				return strings.TrimSpace(string(line)), true
			}
		}
		return "", false
	case strings.HasSuffix(s.Path, "/strategy"):
		v := strings.TrimSuffix(string(content), "\n")
		if slices.Contains(gitStrategies, v) {
			return "", false
		}
		return "strategy " + v, true
	default:
		for line := range bytes.SplitSeq(content, []byte("\n")) {
			m := strategyKey.FindSubmatch(line)
			if m == nil {
				continue
			}
			v := strings.TrimSpace(string(m[1]))
			if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
				v = v[1 : len(v)-1]
			}
			if !slices.Contains(gitStrategies, v) {
				return strings.TrimSpace(string(line)), true
			}
		}
		return "", false
	}
}

// Disarm returns content with each line Arms finds in a todo made a
// comment ("# disarmed by harness: exec ..."): git skips it, or, where
// core.commentChar is not `#`, stops at it as an invalid line; either way
// it runs nothing. ok is false for a state file that is not a todo (the
// caller removes such a file).
func (s GitRunState) Disarm(content []byte) (out []byte, ok bool) {
	if !s.Todo {
		return nil, false
	}
	lines := bytes.Split(content, []byte("\n"))
	for i, line := range lines {
		if todoExec(line) {
			lines[i] = append([]byte("# disarmed by harness: "), bytes.TrimLeft(line, " \t")...)
		}
	}
	return bytes.Join(lines, []byte("\n")), true
}

// todoExec reports whether a todo line's first word is exec or x: git's
// is_command after its leading spaces and tabs, ended by a space, a tab, a
// carriage return or the line's end.
func todoExec(line []byte) bool {
	line = bytes.TrimLeft(line, " \t")
	if i := bytes.IndexAny(line, " \t\r"); i >= 0 {
		line = line[:i]
	}
	return string(line) == "exec" || string(line) == "x"
}

// GitRunMember reports whether member, the path of an entry relative to a
// git directory split into components (as GitMember takes it), is one of
// GitRunStates, or a directory on the way to one (rebase-merge, sequencer,
// a worktrees/<id> or modules/<name> gitdir), and names it: what the file
// tools do not create, write, move or remove, so that they never leave
// state behind that runs a program (commands may: their result is checked
// when they end).
func GitRunMember(member []string) (string, bool) {
	if len(member) == 0 {
		return "", false
	}
	if rule, ok := gitRunTop(member); ok {
		return rule, true
	}
	switch member[0] {
	case "worktrees":
		if len(member) == 2 {
			return "a linked worktree's git directory (it may hold git state that runs programs)", true
		}
		if len(member) > 2 {
			return gitRunTop(member[2:])
		}
	case "modules":
		if len(member) == 2 {
			return "a submodule's git directory (it may hold git state that runs programs)", true
		}
		for i := 2; i < len(member); i++ {
			if rule, ok := gitRunTop(member[i:]); ok {
				return rule, true
			}
		}
	}
	return "", false
}

// gitRunTop is GitRunMember's rule for the members directly below one git
// directory.
func gitRunTop(member []string) (string, bool) {
	rel := strings.Join(member, "/")
	for _, s := range gitRunTable {
		if rel == s.Path || strings.HasPrefix(s.Path, rel+"/") {
			return "git state that runs programs (" + s.Path + ": " + s.Runs + ")", true
		}
	}
	return "", false
}
