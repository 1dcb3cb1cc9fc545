//go:build !linux

package helperbin

// Release does nothing: the embedded helper runs on Linux alone.
func Release() {}
