//go:build linux

package textpages_test

// A cgo package outside the standard library (go-landlock links it into
// harness) makes the link external, as harness's is: the runtime's cgo
// function pointers are then relocated by the dynamic linker into a page
// it makes read-only after (GNU_RELRO), which Shrink must leave as it is.
import _ "kernel.org/pub/linux/libs/security/libcap/psx"
