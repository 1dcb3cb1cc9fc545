//go:build linux

package subproc

import "os"

// ProgramFile is the descriptor p runs from, for tests.
func ProgramFile(p *Program) *os.File { return p.f }

// SocketArgs is socketArgs, for tests.
var SocketArgs = socketArgs

// MaskAncestors is maskAncestors, for tests.
var MaskAncestors = maskAncestors

// BwrapArgv is bwrapArgv, for tests.
var BwrapArgv = bwrapArgv

// ArgsFile is argsFile, for tests.
var ArgsFile = argsFile

// EnterArgs is a NetNS's nsenter command line around argv, for tests.
func EnterArgs(argv ...string) []string { return (&NetNS{}).enterArgs(argv...) }

// Vanished is vanished, for tests.
var Vanished = vanished

// JanitorSandbox hands the janitor pid as a sandbox's init, as RunBwrap
// does, for tests.
func JanitorSandbox(pid int) { janitorSandbox(openInit(pid)) }

// SetTestHookMade sets testHookMade, for tests.
func SetTestHookMade(f func(stage string)) { testHookMade = f }

// JanitorTold returns how many paths this process's janitor knows of.
func JanitorTold() int {
	janitor.mu.Lock()
	defer janitor.mu.Unlock()
	return len(janitor.told)
}

// WaitLateReleases waits for the releases ReleaseAll left trying locks in
// the background, for tests.
func WaitLateReleases() { lateReleases.Wait() }
