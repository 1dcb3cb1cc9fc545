package toolfs

import (
	"bytes"
	"context"
	"path"
	"strconv"
	"strings"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/tool"
)

// ImageValue describes the image a read returned as image content.
type ImageValue struct {
	MIMEType string `json:"mimeType" jsonschema:"image/png, image/jpeg, image/gif or image/webp"`
	Size     int    `json:"size" jsonschema:"the image's size in bytes"`
}

// imageMagic maps the leading bytes of the image formats read returns as
// images to their MIME types. WebP is RIFF....WEBP, checked apart.
var imageMagic = []struct {
	prefix []byte
	mime   string
}{
	{[]byte("\x89PNG\r\n\x1a\n"), "image/png"},
	{[]byte("\xff\xd8\xff"), "image/jpeg"},
	{[]byte("GIF87a"), "image/gif"},
	{[]byte("GIF89a"), "image/gif"},
}

// imageExt holds the extensions of the image formats read shows, used only
// to explain a file over the cap (which is not read, so not sniffed).
var imageExt = map[string]bool{".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".webp": true}

// sniffImage returns the MIME type of b when it starts like a PNG, JPEG,
// GIF or WebP file, else "".
func sniffImage(b []byte) string {
	for _, m := range imageMagic {
		if bytes.HasPrefix(b, m.prefix) {
			return m.mime
		}
	}
	if len(b) >= 12 && bytes.Equal(b[:4], []byte("RIFF")) && bytes.Equal(b[8:12], []byte("WEBP")) {
		return "image/webp"
	}
	return ""
}

// readImage serves a read of a file that is not text: an image (by its
// magic bytes) of at most ReadImageMaxBytes becomes image content, observed
// present like a text read; a file named like an image but over the cap is
// FS_TOO_LARGE; anything else, or a read failing, returns ok false and the
// caller reports its not-text error.
func (t *Tools) readImage(ctx context.Context, call *guard.Call, target fs.Target, info *fs.Info) (tool.Result, bool) {
	data, err := t.deps.FS.ReadBytes(ctx, target, int64(t.cfg.ReadImageMaxBytes))
	dp := target.DisplayPath
	if fs.CodeOf(err) == fs.CodeTooLarge && imageExt[strings.ToLower(path.Ext(dp))] {
		// Too large to sniff within the cap: the name says it is an
		// image, so the cap is the reason it cannot be shown.
		return t.g.Fail(&fs.Error{
			Code: fs.CodeTooLarge, Op: "read", Path: dp,
			Message: "cannot read " + strconv.Quote(dp) + ": not text, and " + strconv.FormatInt(info.Size, 10) +
				" bytes exceeds the " + strconv.Itoa(t.cfg.ReadImageMaxBytes) + "-byte cap on images",
		}, nil), true
	}
	if err != nil {
		return tool.Result{}, false
	}
	mime := sniffImage(data)
	if mime == "" {
		return tool.Result{}, false
	}
	if err := t.observe(call.Session, target, fs.Observation{Kind: fs.Present, Version: info.Version}); err != nil {
		return t.g.Fail(err, nil), true
	}
	audit.FromContext(ctx).Update(func(r *audit.Record) { r.Bytes = int64(len(data)) })
	return tool.Result{
		Text:   "<path>" + dp + "</path>\n<type>image</type>\n<content>\n" + mime + ", " + strconv.Itoa(len(data)) + " bytes (shown as an image)\n</content>",
		Value:  ReadValue{Path: dp, Offset: 1, Lines: []Line{}, Image: &ImageValue{MIMEType: mime, Size: len(data)}},
		Images: []tool.Image{{MIMEType: mime, Data: data}},
	}, true
}
