//go:build linux

package toolfs_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/toolfs"
)

// A write or edit result carries the before and after texts only when each
// is at most ResultTextMaxBytes (issue 15: a result sized to its use): past
// the limit both are left out, textsOmitted says so, the diff still shows
// the change, the JSON conforms to the output schema, and the disk holds the
// whole new content.
func TestResultTextsUnderTheLimit(t *testing.T) {
	const limit = 64
	small, big := "one\ntwo\n", "head\n"+strings.Repeat("line of text\n", 10) // 8 and 135 bytes
	for _, c := range []struct {
		name      string
		tool      string
		prior     string
		args      func(dp string) map[string]any
		wantDisk  string
		wantTexts bool
	}{
		{"write, small texts are carried", "write", small, func(dp string) map[string]any {
			return map[string]any{"file_path": dp, "content": "one\nTWO\n"}
		}, "one\nTWO\n", true},
		{"write, a large new text is left out", "write", small, func(dp string) map[string]any {
			return map[string]any{"file_path": dp, "content": big}
		}, big, false},
		{"write, a large prior text is left out", "write", big, func(dp string) map[string]any {
			return map[string]any{"file_path": dp, "content": small}
		}, small, false},
		{"edit, small texts are carried", "edit", small, func(dp string) map[string]any {
			return map[string]any{"file_path": dp, "old_string": "two", "new_string": "TWO"}
		}, "one\nTWO\n", true},
		{"edit, large texts are left out", "edit", big, func(dp string) map[string]any {
			return map[string]any{"file_path": dp, "old_string": "head", "new_string": "HEAD"}
		}, "HEAD\n" + strings.Repeat("line of text\n", 10), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := wrBase(t)
			dp := wrPut(t, filepath.Join(ws, "f.txt"), c.prior)
			e := wrNew(t, wrSetup{Cwd: ws, Config: toolfs.Config{ResultTextMaxBytes: limit}})
			sess := session.New("s1", ws)
			wrOK(t, e.read(sess, map[string]any{"file_path": dp}))
			tl := e.tools.Write()
			if c.tool == "edit" {
				tl = e.tools.Edit()
			}
			res := wrCall(t, tl, sess, c.args(dp))
			wrOK(t, res)
			assert.Equal(t, c.wantDisk, wrDisk(t, dp))
			wrConforms(t, tl.OutputSchema, res.Value)
			raw, err := json.Marshal(res.Value)
			require.NoError(t, err)
			var got map[string]any
			require.NoError(t, json.Unmarshal(raw, &got))
			assert.Contains(t, got["diff"], "@@", "the diff is always there")
			if c.wantTexts {
				assert.Equal(t, c.prior, got["before"])
				assert.Equal(t, c.wantDisk, got["after"])
				assert.NotContains(t, got, "textsOmitted")
			} else {
				assert.NotContains(t, got, "before")
				assert.NotContains(t, got, "after")
				assert.Equal(t, true, got["textsOmitted"])
				assert.NotContains(t, string(raw), strings.Repeat("line of text\\n", 4), "the whole text is not in the result")
			}
		})
	}
}
