package toolexec

import "io"

// termText reduces what a command writes to its terminal to the text a
// model reads (issue 38), before it is kept: escape sequences (CSI, such
// as colors and cursor moves; OSC, DCS and the other string sequences;
// two-byte ones) are dropped; "\r\n" becomes "\n" and a lone "\r" (a line
// drawn again, as progress bars do) a "\n"; other control characters but
// tab and newline are dropped. It keeps its state between writes, so a
// sequence split across two is dropped whole. Only the reduced text is
// kept, not the raw stream.
type termText struct {
	w     io.Writer
	state int
	cr    bool // a "\r" was seen and not yet written
}

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
				t.state = ttEsc
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
