//go:build !harness_helper

package helperbin

// program is none: this build starts the harness binary itself as the
// command helper.
var program []byte
