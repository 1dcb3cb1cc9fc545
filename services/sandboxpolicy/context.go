package sandboxpolicy

import (
	"encoding/json"
	"strings"
)

// PromptContextName and PromptContextOrder place the policy text among a
// client's prompt sections (spec section 0).
const (
	PromptContextName  = "sandbox:policy"
	PromptContextOrder = 110
)

// PromptContext returns the text that tells a model the standing file policy
// of a call (P-11..P-13). It never mentions temp paths, so it is byte-stable
// across TMPDIR changes (P-14). A policy with an unknown mode gives "".
func PromptContext(p ExecutionPolicy) string {
	switch p.Mode {
	case ReadOnly:
		return "Current DSH file policy: read-only. Any available operation enforced by the DSH file sandbox cannot modify files in the standing mode. Do not refuse a required modification from this policy alone: try an available tool normally and follow any denial and escalation guidance it returns."
	case WorkspaceWrite:
		return "Current DSH file policy: workspace-write. Any available operation enforced by the DSH file sandbox may modify files under the session workspace: " + jsonQuote(p.WorkspaceRoot) + ". Some platform temporary areas may also be writable."
	case DangerFullAccess:
		return "Current DSH file policy: danger-full-access. The DSH file sandbox does not restrict file modifications by available operations."
	default:
		return ""
	}
}

// jsonQuote quotes s as JSON.stringify does: unlike json.Marshal, it leaves
// &, < and > unescaped.
func jsonQuote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
