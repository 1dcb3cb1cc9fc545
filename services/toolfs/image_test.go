//go:build linux

package toolfs_test

import (
	"bytes"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/readbeforewrite"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

func encoded(t *testing.T, enc func(*bytes.Buffer, image.Image) error) []byte {
	t.Helper()
	img := image.NewPaletted(image.Rect(0, 0, 4, 4), color.Palette{color.Black, color.White})
	var b bytes.Buffer
	require.NoError(t, enc(&b, img))
	return b.Bytes()
}

// TestReadImages checks that read returns PNG, JPEG, GIF and WebP files (by
// their magic bytes, whatever their names) as image content with their
// exact bytes, capped, and that other binary files stay not text.
func TestReadImages(t *testing.T) {
	pngBytes := encoded(t, func(b *bytes.Buffer, i image.Image) error { return png.Encode(b, i) })
	jpegBytes := encoded(t, func(b *bytes.Buffer, i image.Image) error { return jpeg.Encode(b, i, nil) })
	gifBytes := encoded(t, func(b *bytes.Buffer, i image.Image) error { return gif.Encode(b, i, nil) })
	webpBytes := append([]byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f"), make([]byte, 13)...)
	cases := []struct {
		name string
		file string
		data []byte
		cap  int
		mime string
		code fs.Code
	}{
		{name: "a PNG is image content", file: "a.png", data: pngBytes, mime: "image/png"},
		{name: "a JPEG named .bin is image content by its magic bytes", file: "photo.bin", data: jpegBytes, mime: "image/jpeg"},
		{name: "a GIF is image content", file: "a.gif", data: gifBytes, mime: "image/gif"},
		{name: "a WebP is image content", file: "a.webp", data: webpBytes, mime: "image/webp"},
		{name: "a PNG over the cap is too large", file: "a.png", data: pngBytes, cap: 10, code: fs.CodeTooLarge},
		{name: "other binary stays not text", file: "a.bin", data: []byte("\x00\x01\x02binary"), code: fs.CodeNotText},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := rdDir(t)
			p := filepath.Join(ws, tc.file)
			require.NoError(t, os.WriteFile(p, tc.data, 0o644))
			rbw := readbeforewrite.New()
			tools, err := toolfs.New(toolfs.Config{ReadImageMaxBytes: tc.cap}, toolfs.Deps{FS: rdLocal(t, ws), Intents: rbw, Observers: []fs.Observer{rbw}})
			require.NoError(t, err)
			sess := session.New("s1", ws)
			res := wrCall(t, tools.Read(), sess, map[string]any{"file_path": tc.file})
			if tc.code != "" {
				require.True(t, res.IsError, res.Text)
				assert.EqualValues(t, string(tc.code), res.Code, res.Text)
				assert.Empty(t, res.Images)
				return
			}
			require.False(t, res.IsError, res.Text)
			require.Len(t, res.Images, 1)
			assert.Equal(t, tool.Image{MIMEType: tc.mime, Data: tc.data}, res.Images[0])
			assert.Equal(t, "<path>"+p+"</path>\n<type>image</type>\n<content>\n"+tc.mime+", "+strconv.Itoa(len(tc.data))+" bytes (shown as an image)\n</content>", res.Text)
			wrConforms(t, tools.Read().OutputSchema, res.Value)
			// The read counts as a read: the image may now be replaced.
			res = wrCall(t, tools.Write(), sess, map[string]any{"file_path": tc.file, "content": "replaced"})
			require.False(t, res.IsError, res.Text)
			assert.Equal(t, "replaced", wrDisk(t, p))
		})
	}
}
