package toolfs

import "fmt"

// Defaults of Config (spec section 0).
const (
	DefaultReadLimit          = 2000
	DefaultReadMaxLineLength  = 2000
	DefaultReadMaxBytes       = 51200
	DefaultReadStreamMinSize  = 10 << 20
	DefaultListLimit          = 1000
	DefaultWriteMaxBytes      = 16 << 20
	DefaultReadImageMaxBytes  = 5 << 20
	DefaultResultTextMaxBytes = 512
)

// Config tunes the tools. A zero field means its default; a negative one
// fails construction with `toolfs: <Field> must be a positive integer`
// (T-10).
type Config struct {
	// ReadLimit is the default and the maximum number of lines one read
	// returns.
	ReadLimit int `yaml:"readLimit" json:"readLimit"`
	// ReadMaxLineLength is the length, in code points, beyond which a line
	// is cut and suffixed `... (line truncated to <n> chars)`.
	ReadMaxLineLength int `yaml:"readMaxLineLength" json:"readMaxLineLength"`
	// ReadMaxBytes caps the UTF-8 bytes of one read's selected lines,
	// joining newlines included.
	ReadMaxBytes int `yaml:"readMaxBytes" json:"readMaxBytes"`
	// ReadStreamMinSize is the file size, in bytes, from which read streams
	// the file in chunks instead of reading it whole.
	ReadStreamMinSize int64 `yaml:"readStreamMinSize" json:"readStreamMinSize"`
	// ListLimit is the default and the maximum number of entries one list
	// returns.
	ListLimit int `yaml:"listLimit" json:"listLimit"`
	// WriteMaxBytes caps, in bytes, the content of one write and the
	// new_string of one edit; larger ones fail with FS_TOO_LARGE before
	// anything is written.
	WriteMaxBytes int `yaml:"writeMaxBytes" json:"writeMaxBytes"`
	// ReadImageMaxBytes caps, in bytes, the PNG, JPEG, GIF or WebP file a
	// read returns as image content; a larger one is FS_TOO_LARGE.
	ReadImageMaxBytes int `yaml:"readImageMaxBytes" json:"readImageMaxBytes"`
	// ResultTextMaxBytes is the largest before or after text, in bytes,
	// that the structured value of a write or edit result carries: when
	// either text is larger, both are left out and textsOmitted is true;
	// the diff is always there (issue 15: a result sized to its use).
	ResultTextMaxBytes int `yaml:"resultTextMaxBytes" json:"resultTextMaxBytes"`
}

// Validate returns cfg with defaults applied, or an error naming the first
// bad field.
func (cfg Config) Validate() (Config, error) {
	fields := []struct {
		name string
		v    *int
		def  int
	}{
		{"ReadLimit", &cfg.ReadLimit, DefaultReadLimit},
		{"ReadMaxLineLength", &cfg.ReadMaxLineLength, DefaultReadMaxLineLength},
		{"ReadMaxBytes", &cfg.ReadMaxBytes, DefaultReadMaxBytes},
		{"ListLimit", &cfg.ListLimit, DefaultListLimit},
		{"WriteMaxBytes", &cfg.WriteMaxBytes, DefaultWriteMaxBytes},
		{"ReadImageMaxBytes", &cfg.ReadImageMaxBytes, DefaultReadImageMaxBytes},
		{"ResultTextMaxBytes", &cfg.ResultTextMaxBytes, DefaultResultTextMaxBytes},
	}
	for _, f := range fields {
		if *f.v < 0 {
			return cfg, fmt.Errorf("toolfs: %s must be a positive integer, got %d", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if cfg.ReadStreamMinSize < 0 {
		return cfg, fmt.Errorf("toolfs: ReadStreamMinSize must be a positive integer, got %d", cfg.ReadStreamMinSize)
	}
	if cfg.ReadStreamMinSize == 0 {
		cfg.ReadStreamMinSize = DefaultReadStreamMinSize
	}
	return cfg, nil
}
