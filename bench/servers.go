package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// referencePackage is the npm package of the reference server and
// referenceVersion its pinned version (also in reference/package.json; the
// lockfile pins its dependencies).
const (
	referencePackage = "@modelcontextprotocol/server-filesystem"
	referenceVersion = "2026.8.31"
)

var (
	//go:embed reference/package.json
	referencePackageJSON []byte
	//go:embed reference/package-lock.json
	referenceLock []byte
)

// installReference installs the pinned reference server into scratch with
// npm, unless scratch already holds this exact install, and returns the path
// of its entry point.
func installReference(ctx context.Context, scratch string, noInstall bool) (string, error) {
	main := filepath.Join(scratch, "node_modules", filepath.FromSlash(referencePackage), "dist", "index.js")
	sum := sha256.Sum256(append(append([]byte{}, referencePackageJSON...), referenceLock...))
	stamp := hex.EncodeToString(sum[:])
	stampFile := filepath.Join(scratch, ".bench-install")
	if got, err := os.ReadFile(stampFile); err == nil && string(got) == stamp {
		if _, err := os.Stat(main); err == nil {
			progress("reference server %s@%s already installed in %s", referencePackage, referenceVersion, scratch)
			return main, checkInstalledVersion(scratch)
		}
	}
	if noInstall {
		return "", fmt.Errorf("%s holds no install of %s@%s and -no-install is set", scratch, referencePackage, referenceVersion)
	}
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return "", err
	}
	_ = os.Remove(stampFile)
	if err := os.WriteFile(filepath.Join(scratch, "package.json"), referencePackageJSON, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(scratch, "package-lock.json"), referenceLock, 0o644); err != nil {
		return "", err
	}
	progress("installing %s@%s into %s (npm install)", referencePackage, referenceVersion, scratch)
	// The lockfile pins every package; --ignore-scripts: the reference and its
	// dependencies are plain JavaScript and need no install scripts.
	cmd := exec.CommandContext(ctx, "npm", "install", "--prefix", scratch, "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm install: %w", err)
	}
	if err := checkInstalledVersion(scratch); err != nil {
		return "", err
	}
	if _, err := os.Stat(main); err != nil {
		return "", fmt.Errorf("after npm install: %w", err)
	}
	return main, os.WriteFile(stampFile, []byte(stamp), 0o644)
}

// checkInstalledVersion verifies the version npm installed.
func checkInstalledVersion(scratch string) error {
	raw, err := os.ReadFile(filepath.Join(scratch, "node_modules", filepath.FromSlash(referencePackage), "package.json"))
	if err != nil {
		return err
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return err
	}
	if pkg.Version != referenceVersion {
		return fmt.Errorf("installed %s is %s, want %s", referencePackage, pkg.Version, referenceVersion)
	}
	return nil
}

// serverSpec is one contender: how to start it on a directory, and its
// tools' names and arguments for the workloads.
type serverSpec struct {
	key   string // "harness", "harness-atomic", "reference" or "floor"
	label string // for tables and the chart
	// durability is harness serve's --durability level ("" for the other
	// servers).
	durability string
	// command returns the command serving the directory dir over stdio.
	command func(dir string) *exec.Cmd
	read    func(path string) *mcp.CallToolParams
	write   func(path, content string) *mcp.CallToolParams
	edit    func(path, oldText, newText string) *mcp.CallToolParams
	tools   []string // tools the workloads need, checked with tools/list
	wrapped bool     // the command is a wrapper (a profiler) around the server
}

// isHarness reports whether spec is harness serve (at either durability).
func (spec serverSpec) isHarness() bool { return spec.durability != "" }

// Durability levels of harness serve (--durability) and the series keys
// that measure them.
const (
	durabilityFull   = "full"
	durabilityAtomic = "atomic"
	keyHarness       = "harness"        // --durability full
	keyAtomic        = "harness-atomic" // --durability atomic
	keyReference     = "reference"
	keyFloor         = "floor"
)

// harnessSpec is `harness serve` in workspace-write mode on dir with the
// given --durability level (full: series "harness"; atomic:
// "harness-atomic"). wrap, when not empty, is a command prefix (a profiler)
// that runs it.
func harnessSpec(bin string, wrap []string, durability string) serverSpec {
	key, label := keyHarness, "harness (durability full)"
	if durability == durabilityAtomic {
		key, label = keyAtomic, "harness (durability atomic)"
	}
	return serverSpec{
		key:        key,
		label:      label,
		durability: durability,
		command: func(dir string) *exec.Cmd {
			argv := append(slices.Clone(wrap), bin, "serve", "--workspace", dir, "--mode", "workspace-write", "--temp-root", dir, "--durability", durability, "--log-level", "warn")
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = withoutHarnessEnv(os.Environ()) // HARNESS_* would change the configuration
			return cmd
		},
		read: func(p string) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"file_path": p}}
		},
		write: func(p, content string) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"file_path": p, "content": content}}
		},
		edit: func(p, oldText, newText string) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "edit", Arguments: map[string]any{"file_path": p, "old_string": oldText, "new_string": newText}}
		},
		tools:   []string{"read", "write", "edit"},
		wrapped: len(wrap) > 0,
	}
}

// referenceSpec is the reference server with dir as its one allowed
// directory; wrap, when not empty, is a command prefix that runs it.
func referenceSpec(main string, wrap []string) serverSpec {
	return serverSpec{
		key:   keyReference,
		label: "reference",
		command: func(dir string) *exec.Cmd {
			argv := append(slices.Clone(wrap), "node", main, dir)
			return exec.Command(argv[0], argv[1:]...)
		},
		read: func(p string) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": p}}
		},
		write: func(p, content string) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": p, "content": content}}
		},
		edit: func(p, oldText, newText string) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "edit_file", Arguments: map[string]any{"path": p, "edits": []map[string]string{{"oldText": oldText, "newText": newText}}}}
		},
		tools:   []string{"read_text_file", "write_file", "edit_file"},
		wrapped: len(wrap) > 0,
	}
}

func withoutHarnessEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "HARNESS_") {
			out = append(out, kv)
		}
	}
	return out
}

// server is a running contender with one client session.
type server struct {
	spec  serverSpec
	dir   string
	pid   int          // the server process, 0 when it runs under a wrapper
	calls atomic.Int64 // tool calls made
	proto string       // negotiated protocol version
	// startup is the wall time from spawning the process to the answer of
	// tools/list (initialize, initialized, tools/list).
	startup time.Duration
	// idleRSS is the process's resident set right after tools/list, bytes
	// (0 when unknown).
	idleRSS int64
	// capture makes the next call record the size of its result, JSON
	// encoded, in captured (outside the timed part: encoding costs).
	capture  atomic.Bool
	captured atomic.Int64
	sess     *mcp.ClientSession
	stderr   *tailBuffer
	// cpuGroup is the cpuacct group the exec round trip put the server in (nil:
	// none), removed when it closes.
	cpuGroup *cpuGroup
}

// startServer starts spec on dir and connects the shared client code to it.
// All servers get the same client: no roots capability (each server is
// given its directory on the command line), default protocol negotiation.
// extraEnv is added to the server's environment.
// protocol is the protocol version the client asks for ("" for the SDK's
// latest). quiet leaves out the progress line.
func startServer(ctx context.Context, spec serverSpec, dir, protocol string, quiet bool, extraEnv ...string) (*server, error) {
	cmd := spec.command(dir)
	cmd.Dir = dir
	if len(extraEnv) > 0 {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, extraEnv...)
	}
	stderr := &tailBuffer{max: 16 << 10}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "harness-bench", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
	})
	began := time.Now() // CommandTransport starts the process in Connect
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		return nil, fmt.Errorf("%s: connect: %w\n%s", spec.key, err, stderr)
	}
	s := &server{spec: spec, dir: dir, sess: sess, stderr: stderr}
	tools, err := sess.ListTools(ctx, nil)
	s.startup = time.Since(began)
	if err != nil {
		_ = s.close()
		return nil, fmt.Errorf("%s: tools/list: %w\n%s", spec.key, err, stderr)
	}
	if cmd.Process != nil && !spec.wrapped {
		if err := checkServerProcess(cmd, cmd.Process.Pid); err != nil {
			progress("%s: %v", spec.key, err)
		} else {
			s.pid = cmd.Process.Pid
			s.idleRSS, _ = procStatusBytes(s.pid, "VmRSS")
		}
	}
	if ir := sess.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		s.proto = ir.ProtocolVersion
		if !quiet {
			progress("started %s (%s %s, protocol %s, pid %d) on %s in %.1f ms, %s resident", spec.key, ir.ServerInfo.Name, ir.ServerInfo.Version, ir.ProtocolVersion, s.pid, dir, float64(s.startup.Microseconds())/1e3, fmtMB(float64(s.idleRSS)))
		}
	}
	have := map[string]bool{}
	for _, t := range tools.Tools {
		have[t.Name] = true
	}
	for _, name := range spec.tools {
		if !have[name] {
			_ = s.close()
			return nil, fmt.Errorf("%s serves no tool %q", spec.key, name)
		}
	}
	return s, nil
}

// call runs one tool call; a protocol error or a tool error is an error.
func (s *server) call(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	s.calls.Add(1)
	res, err := s.sess.CallTool(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w\nserver stderr:\n%s", s.spec.key, p.Name, err, s.stderr)
	}
	if res.IsError {
		return nil, fmt.Errorf("%s %s(%s): tool error: %s%s", s.spec.key, p.Name, briefArgs(p.Arguments), resultText(res), metaCode(res))
	}
	if s.capture.Swap(false) {
		if b, err := json.Marshal(res); err == nil {
			s.captured.Store(int64(len(b)))
		}
	}
	return res, nil
}

// cpu returns the CPU time the server process has used, -1 when unknown.
func (s *server) cpu() time.Duration {
	if s == nil || s.pid == 0 {
		return -1
	}
	d, err := cpuTime(s.pid)
	if err != nil {
		return -1
	}
	return d
}

// peakRSS is the process's resident high-water mark so far, bytes (0 when
// unknown).
func (s *server) peakRSS() int64 {
	if s == nil || s.pid == 0 {
		return 0
	}
	b, err := procStatusBytes(s.pid, "VmHWM")
	if err != nil {
		return 0
	}
	return b
}

func (s *server) close() error {
	err := s.sess.Close()
	s.cpuGroup.remove()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil // stopped by SIGTERM after stdin closed: not a failure of the measurement
	}
	return err
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func metaCode(res *mcp.CallToolResult) string {
	if code, ok := res.Meta["harness/code"].(string); ok {
		return " (" + code + ")"
	}
	return ""
}

func briefArgs(args any) string {
	raw, _ := json.Marshal(args)
	if len(raw) > 200 {
		raw = append(raw[:200], "..."...)
	}
	return string(raw)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
