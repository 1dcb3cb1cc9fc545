package fs_test

import (
	"errors"
	"fmt"

	"github.com/dsh-go/harness/services/fs"
)

// CodeOf reads the FS_* code of an error from any fs.Service method, however
// it was wrapped; errors.Is tests for one code.
func ExampleCodeOf() {
	err := fmt.Errorf("saving notes: %w", &fs.Error{
		Code: fs.CodeStaleVersion, Op: "write", Path: "/w/notes.txt",
		Message: `cannot write "/w/notes.txt": it changed since it was read`,
	})
	fmt.Println(fs.CodeOf(err))
	fmt.Println(errors.Is(err, fs.ErrStaleVersion))
	fmt.Println(fs.CodeOf(errors.New("not from the seam")) == "")
	// Output:
	// FS_STALE_VERSION
	// true
	// true
}
