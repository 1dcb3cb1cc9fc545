//go:build linux

package toolfs_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/toolfs"
)

// TestGrepByteCap checks that grep's content output is capped in bytes like
// read's: on a file of 100 KB lines that all match, the text and the value
// stay within ReadMaxBytes (plus the envelope) at any limit, each line is
// cut with read's marker, and the note says how many matching lines were
// left out and how to narrow.
func TestGrepByteCap(t *testing.T) {
	const lines = 150
	ws := filepath.Join(rdDir(t), "ws")
	require.NoError(t, os.MkdirAll(ws, 0o755))
	var body strings.Builder
	for i := range lines {
		body.WriteString("needle " + strconv.Itoa(i) + " " + strings.Repeat("x", 100<<10) + "\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(ws, "big.txt"), []byte(body.String()), 0o644))
	// 2000 code points, the marker, "N: " and a newline: 2037 to 2039 bytes
	// a line in the text, 2034 to 2035 counted (text and newline).
	for _, c := range []struct {
		name     string
		cfg      toolfs.Config
		args     string
		kept     int
		omitted  int
		beyond   string // the note's words when the limit stopped the search too
		maxBytes int
	}{
		{name: "default limit", args: `{"pattern":"needle","output_mode":"content"}`, kept: 25, omitted: 75, beyond: ", and more beyond limit", maxBytes: 51200},
		{name: "limit 1000", args: `{"pattern":"needle","output_mode":"content","limit":1000}`, kept: 25, omitted: 125, maxBytes: 51200},
		{name: "a smaller read cap", cfg: toolfs.Config{ReadMaxBytes: 10000}, args: `{"pattern":"needle","output_mode":"content","limit":1000}`, kept: 4, omitted: 146, maxBytes: 10000},
		{name: "context lines count", cfg: toolfs.Config{ReadMaxBytes: 10000}, args: `{"pattern":"needle (3|9) ","output_mode":"content","context":2}`, kept: 1, omitted: 1, maxBytes: 10000},
	} {
		for backend, tools := range srBackends(t, ws, c.cfg) {
			t.Run(backend+"/"+c.name, func(t *testing.T) {
				tl := tools.Grep()
				res := rdCall(t, tl, nil, c.args)
				require.False(t, res.IsError)
				assert.LessOrEqual(t, len(res.Text), c.maxBytes+600, "the text is capped")
				raw, err := json.Marshal(res.Value)
				require.NoError(t, err)
				assert.LessOrEqual(t, len(raw), c.maxBytes+100*(c.kept+4)+600, "the value is capped")
				v := res.Value.(toolfs.GrepValue)
				require.Len(t, v.Files, 1)
				got := v.Files[0]
				assert.Equal(t, c.kept, got.Count, "matching lines kept")
				assert.True(t, v.Truncated)
				assert.Equal(t, c.omitted, v.Omitted)
				used := 0
				for _, l := range got.Lines {
					used += len(l.Text) + 1
					assert.True(t, strings.HasSuffix(l.Text, "... (line truncated to 2000 chars)"), "line %d is cut with read's marker", l.Number)
				}
				assert.LessOrEqual(t, used, c.maxBytes)
				_, footer, ok := strings.Cut(res.Text, "\n\n(")
				require.True(t, ok, "a footer")
				want := "Showing " + strconv.Itoa(c.kept) + " matching line"
				if c.kept != 1 {
					want += "s"
				}
				want += " in 1 file. Output capped at " + strconv.Itoa(c.maxBytes) + " bytes: " + strconv.Itoa(c.omitted) + " more matching line"
				if c.omitted != 1 {
					want += "s"
				}
				assert.True(t, strings.HasPrefix(footer, want), "footer %.300q wants %q", footer, want)
				assert.True(t, strings.HasSuffix(footer, " bytes with context) left out"+c.beyond+". Narrow the pattern, the path or the glob, or lower context.)\n</matches>"), "footer %.300q", footer)
				wrConforms(t, tl.OutputSchema, res.Value)
			})
		}
	}
}
