package subproc

import "os"

// Held is a set of holders (Protected.Holder) held open from just after the
// search that found them until the command's start has ended (Hold). Close
// it then.
type Held struct {
	paths []string
	files []*os.File
}

// Close closes every holder held; nil holds none.
func (h *Held) Close() {
	if h == nil {
		return
	}
	for _, f := range h.files {
		_ = f.Close()
	}
}
