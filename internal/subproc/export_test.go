package subproc

import "os"

// ProgramFile is the descriptor p runs from, for tests.
func ProgramFile(p *Program) *os.File { return p.f }

// SocketArgs is socketArgs, for tests.
var SocketArgs = socketArgs

// MaskAncestors is maskAncestors, for tests.
var MaskAncestors = maskAncestors

// Vanished is vanished, for tests.
var Vanished = vanished
