package cli_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/cli"
	"github.com/dsh-go/harness/internal/subproc"
)

// examples returns the command lines under "Examples:" in help, each split
// into words as a shell would (single quotes group).
func examples(t *testing.T, help string) [][]string {
	t.Helper()
	_, rest, ok := strings.Cut(help, "\nExamples:\n")
	require.True(t, ok, "an Examples section")
	var out [][]string
	for line := range strings.Lines(rest) {
		line, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "  harness ")
		if !ok {
			break
		}
		var words []string
		for i, part := range strings.Split(line, "'") {
			if i%2 == 1 {
				words[len(words)-1] += part
				continue
			}
			for j, w := range strings.Split(part, " ") {
				if j == 0 && i > 0 && len(words) > 0 {
					words[len(words)-1] += w
				} else if w != "" {
					words = append(words, w)
				}
			}
		}
		out = append(out, words)
	}
	require.NotEmpty(t, out, "at least one example")
	return out
}

// TestHelpExamplesRun: every command's help has an Examples section, and
// each example runs as written from a project directory holding a
// README.md (serve with no client, so it ends at once; demo is `make
// demo`'s and runs the built binary).
func TestHelpExamplesRun(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# project\nTODO: examples\n"), 0o644))
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	// The state directory, where serve and call write the audit log that
	// audit's examples read.
	state, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	t.Chdir(dir)
	for _, name := range []string{"serve", "call", "tools", "audit", "policy", "demo", "version", "help"} {
		help := runCLI(t, []string{"help", name}, "", false, nil)
		require.EqualValues(t, cli.ExitOK, help.code, help.stderr)
		for _, words := range examples(t, help.stdout) {
			t.Run(strings.Join(words, " "), func(t *testing.T) {
				assert.Equal(t, name, words[0], "an example of %s runs %s", name, name)
				switch {
				case words[0] == "demo":
					t.Skip("the demo runs the built binary (make demo)")
				case len(words) > 1 && words[1] == "exec" && subproc.Probe().LandlockABI < 1:
					t.Skip("Landlock is not available on this kernel")
				}
				// The temp area is the case's own (HARNESS_TEMP_ROOT): /tmp is
				// shared with other processes, whose protected paths come and
				// go while the command runner looks.
				vars := map[string]string{"HARNESS_TEMP_ROOT": tmp, "XDG_STATE_HOME": state}
				if slices.Contains(words, "--listen") {
					serveHTTPExample(t, dir, words, vars)
					return
				}
				r := runCLI(t, words, "", false, vars)
				require.EqualValues(t, cli.ExitOK, r.code, "stdout %s\nstderr %s", r.stdout, r.stderr)
			})
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello", string(b), "the write example wrote its file")
}

// serveHTTPExample runs an example of serve --listen from dir on a free
// port until it listens, checks that it answers its health probe, and
// stops it as SIGTERM would: it must end cleanly.
func serveHTTPExample(t *testing.T, dir string, words []string, vars map[string]string) {
	t.Helper()
	words = slices.Clone(words)
	i := slices.Index(words, "--listen")
	words[i+1] = "127.0.0.1:0" // the example's port may be taken
	pool := writeHTTPFixtures(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, words, cli.Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: getenv(vars)})
	}()
	listening := regexp.MustCompile(`harness: listening on (https?)://(\S+)/mcp`)
	var m []string
	require.Eventually(t, func() bool {
		select {
		case code := <-done:
			t.Fatalf("serve ended (%d) before it listened: %s", code, stderr.String())
		default:
		}
		m = listening.FindStringSubmatch(stderr.String())
		return m != nil
	}, 30*time.Second, 20*time.Millisecond)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}, Timeout: 10 * time.Second}
	res, err := client.Get(m[1] + "://" + m[2] + "/healthz")
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	if slices.Contains(words, "--token-file") {
		base := m[1] + "://" + m[2]
		res, err := client.Post(base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		require.NoError(t, err)
		_ = res.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "no token")
		assert.Equal(t, `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`, res.Header.Get("WWW-Authenticate"))
		res, err = client.Get(base + "/.well-known/oauth-protected-resource/mcp")
		require.NoError(t, err)
		var meta struct{ Resource string }
		require.NoError(t, json.NewDecoder(res.Body).Decode(&meta))
		_ = res.Body.Close()
		assert.Equal(t, base+"/mcp", meta.Resource)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+exampleToken)
		res, err = client.Do(req)
		require.NoError(t, err)
		_ = res.Body.Close()
		assert.Equal(t, http.StatusOK, res.StatusCode, "alice's token opens a session")
		assert.NotEmpty(t, res.Header.Get("Mcp-Session-Id"))
	}
	cancel()
	select {
	case code := <-done:
		assert.EqualValues(t, cli.ExitOK, code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve --listen did not stop")
	}
}
