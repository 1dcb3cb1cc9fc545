package guard

import (
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/tool"
)

// DeniedRead returns the result of a command the deny-read set refused a
// read under policy (issue 24), with fs.CodeReadDenied: Denied's lines,
// with the read marker (sandbox.ReadDenialMarker) in place of the file
// marker and without the no-workspace line (which is about writes); then
// text, the command's own output, when there is any.
func (g *Guard) DeniedRead(policy sandbox.ExecutionPolicy, detail, text string) tool.Result {
	msg := g.lines(sandbox.ReadDenialMarker(policy.Mode), &policy, detail, false)
	if text != "" {
		msg += "\n" + text
	}
	return tool.ErrorResult(msg, fs.CodeReadDenied)
}
