//go:build race

package subproc

// selfEnv is the environment of a helper that runs this binary and exits
// (the command's helper, a network namespace's listener). Built with the
// race detector, whose runtime sleeps a second before a process exits with
// status 0 (GORACE atexit_sleep_ms, default 1000) to catch races at exit,
// that second would be added to every command; a race found still ends
// the helper with the detector's status (66).
var selfEnv = []string{"GORACE=atexit_sleep_ms=0"}
