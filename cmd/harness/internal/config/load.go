package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// EnvPrefix prefixes every environment variable: HARNESS_MODE for --mode,
// HARNESS_TEMP_ROOT for --temp-root (a list separated by the OS path list
// separator), and so on.
const EnvPrefix = "HARNESS_"

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// Flags registers the configuration flags on fs, including --config, and
// returns the function that, after fs.Parse, loads the whole configuration:
// defaults, then the YAML file (--config or HARNESS_CONFIG), then HARNESS_*
// variables from getenv, then the flags that were set. The result is
// validated.
func Flags(fs *flag.FlagSet, getenv func(string) string) func() (Config, error) {
	def := Default()
	var (
		file      = fs.String("config", "", "YAML configuration file (keys are the flag names)")
		backend   = fs.String("fs", def.FS, "filesystem backend: sandbox or local")
		mode      = fs.String("mode", def.Mode, "default sandbox mode: read-only, workspace-write or danger-full-access")
		workspace = fs.String("workspace", "", "workspace root and every session's working directory (default: the client's first root, else the working directory)")
		temps     stringList
		readLimit = fs.Int("read-limit", 0, "lines one read returns at most (0: 2000)")
		lineLen   = fs.Int("read-max-line-length", 0, "code points kept of a line (0: 2000)")
		readBytes = fs.Int("read-max-bytes", 0, "bytes one read returns at most (0: 51200)")
		streamMin = fs.Int64("read-stream-min-size", 0, "file size from which reads stream (0: 10 MiB)")
		listLimit = fs.Int("list-limit", 0, "entries one list returns at most (0: 1000)")
		writeMax  = fs.Int("write-max-bytes", 0, "bytes of one write's content or one edit's new_string at most (0: 16 MiB)")
		inv       = fs.Bool("invariants", false, "check runtime invariants")
		logLevel  = fs.String("log-level", def.LogLevel, "log level: debug, info, warn or error")
		logFormat = fs.String("log-format", def.LogFormat, "log format on stderr: json or console")
	)
	fs.Var(&temps, "temp-root", "temp area writable under workspace-write (repeatable; default: /tmp and $TMPDIR)")
	return func() (Config, error) {
		cfg := def
		path := *file
		if path == "" {
			path = getenv(EnvPrefix + "CONFIG")
		}
		if path != "" {
			if err := loadYAML(path, &cfg); err != nil {
				return cfg, err
			}
		}
		if err := applyEnv(&cfg, getenv); err != nil {
			return cfg, err
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		apply := map[string]func(){
			"fs":                   func() { cfg.FS = *backend },
			"mode":                 func() { cfg.Mode = *mode },
			"workspace":            func() { cfg.Workspace = *workspace },
			"temp-root":            func() { cfg.TempRoots = temps },
			"read-limit":           func() { cfg.ReadLimit = *readLimit },
			"read-max-line-length": func() { cfg.ReadMaxLineLength = *lineLen },
			"read-max-bytes":       func() { cfg.ReadMaxBytes = *readBytes },
			"read-stream-min-size": func() { cfg.ReadStreamMinSize = *streamMin },
			"list-limit":           func() { cfg.ListLimit = *listLimit },
			"write-max-bytes":      func() { cfg.WriteMaxBytes = *writeMax },
			"invariants":           func() { cfg.Invariants = *inv },
			"log-level":            func() { cfg.LogLevel = *logLevel },
			"log-format":           func() { cfg.LogFormat = *logFormat },
		}
		for name, f := range apply {
			if set[name] {
				f()
			}
		}
		return cfg, cfg.Validate()
	}
}

// loadYAML decodes the file at path into cfg strictly: an unknown key is an
// error naming it.
func loadYAML(path string, cfg *Config) error {
	b, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	return nil
}

// applyEnv sets the fields whose HARNESS_* variable is non-empty.
func applyEnv(cfg *Config, getenv func(string) string) error {
	str := func(name string, dst *string) {
		if v := getenv(EnvPrefix + name); v != "" {
			*dst = v
		}
	}
	str("FS", &cfg.FS)
	str("MODE", &cfg.Mode)
	str("WORKSPACE", &cfg.Workspace)
	str("LOG_LEVEL", &cfg.LogLevel)
	str("LOG_FORMAT", &cfg.LogFormat)
	if v := getenv(EnvPrefix + "TEMP_ROOT"); v != "" {
		cfg.TempRoots = filepath.SplitList(v)
	}
	ints := []struct {
		name string
		dst  *int
	}{
		{"READ_LIMIT", &cfg.ReadLimit},
		{"READ_MAX_LINE_LENGTH", &cfg.ReadMaxLineLength},
		{"READ_MAX_BYTES", &cfg.ReadMaxBytes},
		{"LIST_LIMIT", &cfg.ListLimit},
		{"WRITE_MAX_BYTES", &cfg.WriteMaxBytes},
	}
	for _, i := range ints {
		if v := getenv(EnvPrefix + i.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s%s: not an integer: %q", EnvPrefix, i.name, v)
			}
			*i.dst = n
		}
	}
	if v := getenv(EnvPrefix + "READ_STREAM_MIN_SIZE"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%sREAD_STREAM_MIN_SIZE: not an integer: %q", EnvPrefix, v)
		}
		cfg.ReadStreamMinSize = n
	}
	if v := getenv(EnvPrefix + "INVARIANTS"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%sINVARIANTS: not a boolean: %q", EnvPrefix, v)
		}
		cfg.Invariants = b
	}
	return nil
}
