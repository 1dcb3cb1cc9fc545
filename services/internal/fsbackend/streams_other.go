//go:build !linux

package fsbackend

// consumingStreams is Linux's (streams_linux.go): none elsewhere.
var consumingStreams = map[int64][]string{}
