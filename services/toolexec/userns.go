package toolexec

import (
	"strconv"
	"strings"
)

// usernsFailures are how programs report that they could not make a user
// namespace of their own (the sandbox sets max_user_namespaces to 0 for
// commands: ENOSPC; and refuses some paths with EPERM): Chromium's zygote,
// unshare(1), bubblewrap, and the errors beside a namespace word.
var usernsFailures = []string{"No usable sandbox", "Failed to move to new namespace", "unshare failed", "Creating new namespace failed"}

// namespaceErrors are the errors that, beside the word "namespace" or
// "unshare" on one line, tell the same failure.
var namespaceErrors = []string{"No space left on device", "ENOSPC", "Operation not permitted", "EPERM"}

// maxNoteLine bounds the stderr line a note quotes, in bytes.
const maxNoteLine = 300

// usernsNote is the note a confined command's result gets when its stderr
// shows a program failing to make a user namespace of its own (issue 36),
// and whether it does: the line that shows it, why, and what to do. A
// wider mode does not help (every mode harness confines forbids them), so
// it is a note, not a denial with an escalation.
func usernsNote(stderr string) (string, bool) {
	for line := range strings.SplitSeq(stderr, "\n") {
		found := index(line, usernsFailures) >= 0
		if !found {
			lower := strings.ToLower(line)
			found = (strings.Contains(lower, "namespace") || strings.Contains(lower, "unshare")) && index(line, namespaceErrors) >= 0
		}
		if found {
			line = strings.TrimSpace(line)
			if len(line) > maxNoteLine {
				line = line[:maxNoteLine] + "..."
			}
			return "[sandbox: commands cannot make user namespaces]\n(inferred: the command failed and its stderr reports " +
				strconv.Quote(line) + ": a program tried to make a sandbox of its own (a user namespace), which harness's sandbox does not allow. " +
				"Chromium, Chrome and Electron apps: pass --no-sandbox (harness's sandbox confines them instead); Playwright: launch with chromiumSandbox: false; " +
				"Puppeteer: args: ['--no-sandbox']; unshare, bwrap and rootless containers do not run here)", true
		}
	}
	return "", false
}
