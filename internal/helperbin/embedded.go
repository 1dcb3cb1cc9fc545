//go:build harness_helper

package helperbin

import _ "embed" // the helper's bytes

// program is the helper, built by scripts/build-harness.sh, which maps
// helper.bin to it with go build's -overlay (nothing is written into the
// source tree).
//
//go:embed helper.bin
var program []byte
