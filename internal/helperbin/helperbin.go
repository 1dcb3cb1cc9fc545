// Package helperbin holds the command helper harness starts for each
// command (the program in ./helper), when the binary was built with it:
// `make build` (scripts/build-harness.sh) builds ./helper first, then
// harness with the build tag harness_helper and the helper's bytes
// embedded. A build without the tag (go build ./cmd/harness) has none, and
// harness starts a copy of itself as the helper instead: the same
// behavior, at several milliseconds more of CPU and wall time per command
// (docs/benchmarks.md).
package helperbin

// Program returns the embedded helper's executable bytes, nil in a build
// without it. The slice is shared: callers must not modify it.
func Program() []byte { return program }
