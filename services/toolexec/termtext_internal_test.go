package toolexec

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTermText (issue 38): what a terminal shows is kept as text, whatever
// the write boundaries: escape sequences dropped whole (CSI, OSC ended by
// BEL or ST, two-byte ones), \r\n as \n, a lone \r as \n, other control
// characters dropped; tabs, newlines and UTF-8 kept.
func TestTermText(t *testing.T) {
	cases := []struct {
		name string
		in   []string
		want string
	}{
		{"plain", []string{"hello\n"}, "hello\n"},
		{"crlf", []string{"a\r\nb\r\n"}, "a\nb\n"},
		{"crlf split", []string{"a\r", "\nb"}, "a\nb"},
		{"lone cr redraws", []string{"10%\r20%\r100%\n"}, "10%\n20%\n100%\n"},
		{"colors", []string{"\x1b[31mred\x1b[0m ok"}, "red ok"},
		{"csi split", []string{"x\x1b[", "1;3", "1mred"}, "xred"},
		{"osc bel", []string{"\x1b]0;title\x07after"}, "after"},
		{"osc st split", []string{"\x1b]8;;http://x\x1b", "\\link\x1b]8;;\x1b\\"}, "link"},
		{"charset", []string{"\x1b(Bok"}, "ok"},
		{"controls", []string{"a\x07b\x08c\x00d\x7fe\tf"}, "abcde\tf"},
		{"utf-8", []string{"héllo ✓\n"}, "héllo ✓\n"},
		{"echoed ^C", []string{"^C\r\n>>> "}, "^C\n>>> "},
		{"can cancels", []string{"\x1b]0;title\x18after"}, "after"},
		{"sub cancels", []string{"\x1b[12\x1aafter"}, "after"},
		{
			"an unterminated osc is cut",
			[]string{"title\x1b]0;", strings.Repeat("x", maxSequence), "VISIBLE\n"},
			"title\n[... an escape sequence left open: 4096 bytes of it dropped ...]\nxxxVISIBLE\n",
		}, // "]0;" and 4093 x: 4096
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			tt := &termText{w: &out}
			for _, p := range c.in {
				n, err := tt.Write([]byte(p))
				assert.NoError(t, err)
				assert.Equal(t, len(p), n)
			}
			assert.Equal(t, c.want, out.String())
		})
	}
}
