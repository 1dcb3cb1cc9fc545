// Package helperbin holds the command helper harness starts for each
// command (the program in ./helper), when the binary was built with it:
// `make build` (scripts/build-harness.sh) builds ./helper first, then
// harness with the build tag harness_helper, the helper's bytes embedded
// and their SHA-256 stamped (-ldflags -X). A build without the tag (go
// build ./cmd/harness) has none, and harness starts a copy of itself as
// the helper instead: the same behavior, at several milliseconds more of
// CPU and wall time per command (docs/benchmarks.md).
package helperbin

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// sum is the SHA-256 (hex) of the helper scripts/build-harness.sh built
// for this binary, stamped with -ldflags -X; empty otherwise.
var sum string

// Present reports whether the binary carries a stamped helper: Program
// still checks it.
func Present() bool { return len(program) > 0 && sum != "" }

// Program returns the embedded helper's executable bytes when they are
// the helper the build stamped (their SHA-256 is sum), nil otherwise: a
// build without the helper, or one with the build tag but not through
// scripts/build-harness.sh, or whose helper.bin came from elsewhere (an
// older tree's: its helper could ignore what a newer harness asks of it).
// harness then starts itself as the helper, which is always right. The
// check runs once (about 3 ms for 4 MB); the slice is shared: callers must
// not modify it.
func Program() []byte { return verified() }

// verified is check, made once.
var verified = sync.OnceValue(check)

// check returns program when it is the stamped helper, else nil.
func check() []byte {
	if !Present() {
		return nil
	}
	got := sha256.Sum256(program)
	if hex.EncodeToString(got[:]) != sum {
		return nil
	}
	return program
}
