package toolexec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dsh-go/harness/services/exec"
)

// TestDisarmedDetailHeadings: git state and entries in place of protected
// links are reported under their own headings, git state first, each line
// under its heading; a kind with no entry has no heading.
func TestDisarmedDetailHeadings(t *testing.T) {
	todo := exec.DisarmedState{Path: "/w/.git/rebase-merge/git-rebase-todo", Runs: "the rebase todo's exec lines", Found: "exec sh", Action: "made comments"}
	link := exec.DisarmedState{Path: "/w/.bashrc", Runs: "a protected link's place, which the host reads through it", Found: "an entry in place of the link to dots/bashrc", Action: "moved aside", Link: true}
	both := disarmedDetail([]exec.DisarmedState{link, todo})
	git, linked := strings.Index(both, "left git state"), strings.Index(both, "in place of a protected link")
	assert.True(t, git >= 0 && linked > git, both)
	assert.True(t, strings.Index(both, todo.Path) > git && strings.Index(both, todo.Path) < linked, both)
	assert.Greater(t, strings.Index(both, link.Path), linked, both)

	only := disarmedDetail([]exec.DisarmedState{link})
	assert.NotContains(t, only, "git state")
	assert.True(t, strings.HasPrefix(only, "the command put its own entry in place of a protected link"), only)
	assert.NotContains(t, disarmedDetail([]exec.DisarmedState{todo}), "protected link")
}
