package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// profileHook is added to package main of cmd/harness with `go build
// -overlay` (no file of the main module changes on disk). With
// BENCH_CPUPROFILE set, the server records a CPU profile from its start;
// SIGUSR1 stops it and writes an allocation profile beside it, then a
// ".done" file. The bench tool sends SIGUSR1 before it closes the session.
const profileHook = `package main

import (
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

func init() {
	path := os.Getenv("BENCH_CPUPROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		panic(err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		<-sig
		pprof.StopCPUProfile()
		_ = f.Close()
		if a, err := os.Create(path + ".allocs"); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(a, 0)
			_ = a.Close()
		}
		_ = os.WriteFile(path+".done", nil, 0o644)
	}()
}
`

// buildProfiled builds cmd/harness of the module at moduleDir with
// profileHook into dir and returns the binary's path.
func buildProfiled(ctx context.Context, moduleDir, dir string) (string, error) {
	hook := filepath.Join(dir, "zz_benchprofile.go")
	if err := os.WriteFile(hook, []byte(profileHook), 0o644); err != nil {
		return "", err
	}
	// With the command helper embedded, as make build builds it
	// (scripts/build-harness.sh).
	helper := filepath.Join(dir, "helper.bin")
	build := exec.CommandContext(ctx, "go", "build", "-tags", "harness_helper", "-o", helper, "./internal/helperbin/helper")
	build.Dir = moduleDir
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building the command helper: %w", err)
	}
	image, err := os.ReadFile(helper)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(image)
	overlay, err := json.Marshal(map[string]map[string]string{
		"Replace": {
			filepath.Join(moduleDir, "cmd", "harness", "zz_benchprofile.go"): hook,
			filepath.Join(moduleDir, "internal", "helperbin", "helper.bin"):  helper,
		},
	})
	if err != nil {
		return "", err
	}
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "harness-profiled")
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "harness_helper", "-overlay", overlayFile,
		"-ldflags", "-X github.com/dsh-go/harness/internal/helperbin.sum="+hex.EncodeToString(sum[:]), "-o", bin, "./cmd/harness")
	cmd.Dir = moduleDir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the profiled harness: %w", err)
	}
	return bin, nil
}

// stopProfile asks a profiled server to write its profiles and waits for
// them.
func stopProfile(s *server, path string) error {
	if s.pid == 0 {
		return fmt.Errorf("no process to signal")
	}
	if err := syscall.Kill(s.pid, syscall.SIGUSR1); err != nil {
		return err
	}
	for range 100 {
		if _, err := os.Stat(path + ".done"); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s: no profile after 5s", path)
}

// cpuTime returns the user and system CPU time a process has used, from
// /proc/PID/stat.
func cpuTime(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	// utime and stime are fields 14 and 15, f[11] and f[12] here, in
	// clock ticks (100 per second on Linux).
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return time.Duration(ut+st) * (time.Second / 100), nil
}

// selfCPU returns the CPU time (user and system) this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
