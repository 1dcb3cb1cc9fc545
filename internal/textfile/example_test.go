package textfile_test

import (
	"fmt"

	"github.com/dsh-go/harness/internal/textfile"
)

// A Style prints as its name, so a diagnostic or a failed test names the
// line-ending convention it saw.
func ExampleStyle_String() {
	fmt.Println(textfile.LF, textfile.CRLF, textfile.Style(7))
	// Output: LF CRLF Style(7)
}
