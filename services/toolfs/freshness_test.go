//go:build linux

package toolfs_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/toolfs"
)

// TestStalenessByContent covers spec difference 14 (issue 13, item 9): after
// a whole-file read, a version mismatch with the same size and content hash
// is not stale; a changed content, or a basis without a content hash, is.
// Each case reads, changes the file from outside, calls, and checks the disk.
func TestStalenessByContent(t *testing.T) {
	touch := func(t *testing.T, p string) {
		later := time.Now().Add(time.Hour)
		require.NoError(t, os.Chtimes(p, later, later), "touch")
	}
	copyAwayAndBack := func(t *testing.T, p string) {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		away := filepath.Join(filepath.Dir(p), ".away")
		require.NoError(t, os.WriteFile(away, raw, 0o644))
		require.NoError(t, os.Remove(p))
		require.NoError(t, os.Rename(away, p), "a new inode with the same bytes")
	}
	sameSizeOtherBytes := func(t *testing.T, p string) {
		require.NoError(t, os.WriteFile(p, []byte("alphA\r\nbeta\n"), 0o644))
	}
	const original = "alpha\r\nbeta\n"
	tests := []struct {
		name   string
		stream bool                         // the read streams (ReadStreamMinSize 1)
		own    bool                         // the basis is the session's own write (no content hash)
		change func(t *testing.T, p string) // the outside change after the read
		edit   bool
		want   string // the disk afterwards; "" means FS_STALE_VERSION and the disk as changed
	}{
		{name: "read, touch, edit: succeeds", change: touch, edit: true, want: "ALPHA\r\nbeta\n"},
		{name: "read, touch, write: succeeds", change: touch, want: "new\ncontent\n"},
		{name: "streamed read, touch, edit: succeeds", stream: true, change: touch, edit: true, want: "ALPHA\r\nbeta\n"},
		{name: "read, copy away and move back, edit: succeeds", change: copyAwayAndBack, edit: true, want: "ALPHA\r\nbeta\n"},
		{name: "read, copy away and move back, write: succeeds", change: copyAwayAndBack, want: "new\ncontent\n"},
		{name: "read, same size other bytes, edit: stale", change: sameSizeOtherBytes, edit: true},
		{name: "read, same size other bytes, write: stale", change: sameSizeOtherBytes},
		{name: "own write (no content hash), touch, edit: stale by version", own: true, change: touch, edit: true},
		{name: "own write (no content hash), touch, write: stale by version", own: true, change: touch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := wrBase(t)
			p := wrPut(t, filepath.Join(ws, "a.txt"), original)
			e := wrLocal(t, ws, false)
			if tc.stream {
				e = wrNew(t, wrSetup{Cwd: ws, Config: toolfs.Config{ReadStreamMinSize: 1}})
			}
			sess := session.New("s1", ws)
			e.mustRead(sess, "a.txt")
			if tc.own {
				wrOK(t, e.write(sess, map[string]any{"file_path": "a.txt", "content": "alpha\nbeta\n"}))
			}
			before := e.version(p)
			tc.change(t, p)
			require.NotEqual(t, before, e.version(p), "the version changed")
			changed := wrDisk(t, p)

			var code, verb string
			if tc.edit {
				res := e.edit(sess, map[string]any{"file_path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"})
				code, verb = string(res.Code), "edit"
				if tc.want != "" {
					wrOK(t, res)
				}
			} else {
				res := e.write(sess, map[string]any{"file_path": "a.txt", "content": "new\ncontent\n"})
				code, verb = string(res.Code), "write"
				if tc.want != "" {
					wrOK(t, res)
				}
			}
			if tc.want == "" {
				assert.EqualValues(t, fs.CodeStaleVersion, code, verb)
				assert.Equal(t, changed, wrDisk(t, p), "nothing written")
				return
			}
			assert.Equal(t, tc.want, wrDisk(t, p))
		})
	}
}

// TestNotTextObserved covers issue 13, item 10: a read of a file that is not
// text (here Latin-1) still fails FS_NOT_TEXT, but records the observation,
// so a deliberate whole-file write replaces it; an outside change after the
// refused read is still stale.
func TestNotTextObserved(t *testing.T) {
	latin1 := "caf\xe9 cr\xe8me\n"
	t.Run("read is FS_NOT_TEXT, then write lands", func(t *testing.T) {
		ws := wrBase(t)
		p := wrPut(t, filepath.Join(ws, "menu.txt"), latin1)
		e := wrLocal(t, ws, false)
		sess := session.New("s1", ws)
		res := e.read(sess, map[string]any{"file_path": "menu.txt"})
		wrFail(t, res, fs.CodeNotText, `Error: cannot read "`+p+`": invalid UTF-8 text — it cannot be shown as text; a whole-file write may replace it`)
		res = e.write(sess, map[string]any{"file_path": "menu.txt", "content": "café crème\n"})
		wrOK(t, res)
		assert.Equal(t, "café crème\n", wrDisk(t, p), "the new bytes, as given")
	})
	t.Run("read is FS_NOT_TEXT, outside change, write is stale", func(t *testing.T) {
		ws := wrBase(t)
		p := wrPut(t, filepath.Join(ws, "menu.txt"), latin1)
		e := wrLocal(t, ws, false)
		sess := session.New("s1", ws)
		wrFail(t, e.read(sess, map[string]any{"file_path": "menu.txt"}), fs.CodeNotText,
			`Error: cannot read "`+p+`": invalid UTF-8 text — it cannot be shown as text; a whole-file write may replace it`)
		later := time.Now().Add(time.Hour)
		require.NoError(t, os.Chtimes(p, later, later))
		res := e.write(sess, map[string]any{"file_path": "menu.txt", "content": "café crème\n"})
		assert.EqualValues(t, fs.CodeStaleVersion, res.Code, "seen by version only: %s", res.Text)
		assert.Equal(t, latin1, wrDisk(t, p))
	})
}
