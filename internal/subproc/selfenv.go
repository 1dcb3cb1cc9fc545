//go:build !race

package subproc

// selfEnv is the environment of a helper that runs this binary and exits
// (the command's helper, a network namespace's listener): none.
var selfEnv = []string{}
