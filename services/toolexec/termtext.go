package toolexec

import (
	"io"
	"strconv"
)

// termText reduces what a command writes to its terminal to the text a
// model reads (issue 38), before it is kept: escape sequences (CSI, such
// as colors and cursor moves; OSC, DCS and the other string sequences;
// two-byte ones) are dropped; "\r\n" becomes "\n" and a lone "\r" (a line
// drawn again, as progress bars do) a "\n"; other control characters but
// tab and newline are dropped. It keeps its state between writes, so a
// sequence split across two is dropped whole. A sequence ends where the
// terminal would end it: its final byte, BEL or ST for a string, CAN or SUB
// (which cancel it); one still open after maxSequence bytes (an
// unterminated OSC a file printed) is cut there with a line saying so, and
// what follows is text again, so no output can hide the rest. Only the
// reduced text is kept, not the raw stream.
type termText struct {
	w     io.Writer
	state int
	cr    bool // a "\r" was seen and not yet written
	n     int  // bytes of the sequence being dropped
}

// maxSequence bounds the bytes of one escape sequence termText drops.
const maxSequence = 4096

// States of termText.
const (
	ttText   = iota
	ttEsc    // after ESC
	ttCSI    // in ESC [ ... final byte
	ttString // in OSC, DCS, SOS, PM or APC, until BEL or ESC \
	ttStrEsc // ESC inside a string sequence
)

func (t *termText) Write(p []byte) (int, error) {
	out := make([]byte, 0, len(p))
	for _, b := range p {
		if t.state != ttText {
			t.n++
			switch {
			case b == 0x18 || b == 0x1a:
				// CAN and SUB cancel a sequence.
				t.state = ttText
				continue
			case t.n > maxSequence:
				out = append(out, "\n[... an escape sequence left open: "+strconv.Itoa(maxSequence)+" bytes of it dropped ...]\n"...)
				t.state = ttText
			}
		}
		switch t.state {
		case ttText:
			if t.cr {
				t.cr = false
				out = append(out, '\n')
				if b == '\n' {
					continue
				}
			}
			switch {
			case b == 0x1b:
				t.state, t.n = ttEsc, 0
			case b == '\r':
				t.cr = true
			case b == '\n' || b == '\t':
				out = append(out, b)
			case b < 0x20 || b == 0x7f:
			default:
				out = append(out, b)
			}
		case ttEsc:
			switch {
			case b == '[':
				t.state = ttCSI
			case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
				t.state = ttString
			case b >= 0x20 && b < 0x30:
				// An intermediate byte: the sequence goes on.
			default:
				t.state = ttText
			}
		case ttCSI:
			if b >= 0x40 && b <= 0x7e {
				t.state = ttText
			}
		case ttString:
			switch b {
			case 0x07:
				t.state = ttText
			case 0x1b:
				t.state = ttStrEsc
			}
		case ttStrEsc:
			if b == '\\' {
				t.state = ttText
			} else {
				t.state = ttString
			}
		}
	}
	if len(out) > 0 {
		if _, err := t.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
