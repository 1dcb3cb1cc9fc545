package fs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
)

// ReplaceSeen guards a write: it lands only while the file is still at
// the version the caller saw; after anyone else's change it is
// FS_STALE_VERSION and the file keeps the other change.
func ExampleReplaceSeen() {
	dir, _ := os.MkdirTemp("", "harness-example-")
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, "notes.txt")
	_ = os.WriteFile(path, []byte("one\n"), 0o644)

	ctx := context.Background()
	svc, _ := fslocal.New(fslocal.Config{Cwd: dir}, nil)
	target, _ := svc.Resolve(ctx, "notes.txt", fs.ResolveOptions{})
	seen, _ := svc.Stat(ctx, target)

	_, err := svc.WriteText(ctx, target, "two\n", fs.WriteOptions{Intent: fs.ReplaceSeen(fs.Observation{Version: seen.Version})})
	fmt.Println("first write:", err == nil)

	_, err = svc.WriteText(ctx, target, "three\n", fs.WriteOptions{Intent: fs.ReplaceSeen(fs.Observation{Version: seen.Version})})
	fmt.Println("second write:", fs.CodeOf(err))
	data, _ := os.ReadFile(path)
	fmt.Printf("on disk: %q\n", data)
	// Output:
	// first write: true
	// second write: FS_STALE_VERSION
	// on disk: "two\n"
}
