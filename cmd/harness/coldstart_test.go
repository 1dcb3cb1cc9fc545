//go:build linux

package main_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkServeColdStart spawns the built `harness serve` and times, per
// iteration, from the spawn to the answer of its initialize (one line
// written, one read: no SDK in the way), in a fresh workspace, with the
// default journal and audit log (in the test's own state directory: their
// opening is what issue 36 moved off the first answer), with the journal
// off, and with the exec tool off too. Each variant also reports idle-MB,
// the server's mean VmRSS (10^6 bytes) right after the answer.
func BenchmarkServeColdStart(b *testing.B) {
	bin, err := buildOnce()
	require.NoError(b, err)
	ws := b.TempDir()
	variants := []struct {
		name string
		args []string
	}{
		{"default", nil},
		{"journal-off", []string{"--journal-max-bytes", "0"}},
		{"journal-and-exec-off", []string{"--journal-max-bytes", "0", "--exec", "off"}},
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}` + "\n"
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			var rss float64
			for b.Loop() {
				cmd := exec.Command(bin, append([]string{"serve", "--workspace", ws}, v.args...)...)
				stdin, err := cmd.StdinPipe()
				require.NoError(b, err)
				stdout, err := cmd.StdoutPipe()
				require.NoError(b, err)
				require.NoError(b, cmd.Start())
				_, err = stdin.Write([]byte(initialize))
				require.NoError(b, err)
				line, err := bufio.NewReader(stdout).ReadString('\n')
				require.NoError(b, err)
				require.Contains(b, line, `"result"`)
				b.StopTimer()
				rss += vmRSS(b, cmd.Process.Pid)
				require.NoError(b, stdin.Close())
				require.NoError(b, cmd.Wait())
				b.StartTimer()
			}
			b.ReportMetric(rss/float64(b.N), "idle-MB")
		})
	}
}

// vmRSS returns process pid's VmRSS in MB (10^6 bytes).
func vmRSS(b *testing.B, pid int) float64 {
	b.Helper()
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	require.NoError(b, err)
	for l := range strings.Lines(string(status)) {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseFloat(f[1], 64)
			require.NoError(b, err)
			return kb * 1024 / 1e6
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
