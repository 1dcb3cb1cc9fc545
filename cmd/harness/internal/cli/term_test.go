package cli

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dsh-go/harness/services/undo"
)

func TestTerm(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"plain text is kept", "/ws/src/main.go", "/ws/src/main.go"},
		{"non-ASCII letters are kept", "/ws/résumé 文件.txt", "/ws/résumé 文件.txt"},
		{"the replacement character is kept", "a\ufffdb", "a\ufffdb"},
		{"a terminal escape", "evil\x1b[2J\x1b[31mRED", `evil\x1b[2J\x1b[31mRED`},
		{"newline, carriage return, tab", "a\nFAKE\r\tb", `a\nFAKE\r\tb`},
		{"DEL and a C1 control (CSI)", "a\x7fb\u009bc", `a\x7fb\u009bc`},
		{"right-to-left override", "x\u202egnp.exe", `x\u202egnp.exe`},
		{"bidi embeddings, isolates and marks", "\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f", `\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f`},
		{"zero-width and byte order marks", "a\u200bb\u200dc\ufeffd", `a\u200bb\u200dc\ufeffd`},
		{"line and paragraph separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"bytes that are not UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, term(tt.in))
		})
	}
}

// termErr shows the message escaped and keeps the error it wraps.
func TestTermErr(t *testing.T) {
	assert.NoError(t, termErr(nil))
	ue := &undo.Error{Code: undo.CodeChangedSince, Path: "/ws/a\x1b[2J\nb\u202e", Reason: "changed since"}
	err := termErr(ue)
	assert.Equal(t, `JOURNAL_CHANGED_SINCE: /ws/a\x1b[2J\nb\u202e: changed since`, err.Error())
	got, ok := errors.AsType[*undo.Error](err)
	assert.True(t, ok)
	assert.Same(t, ue, got)
}
