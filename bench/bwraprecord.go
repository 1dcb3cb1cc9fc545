package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// harness hands its bwrap the arguments on a descriptor (`--args FD`), so a
// command cannot read its masks from /proc/1/cmdline, and neither can the
// bench. The bench learns them from a recording bwrap: a copy of its own
// executable put first in the PATH of a second harness server (the probe
// server), which, started as `bwrap --args FD ...`, copies the arguments
// beside itself and execs the real bwrap with its arguments unchanged.

// Files beside the recording bwrap: the real bwrap's path, and the last
// recorded argument list (NUL-separated, as bwrap reads it).
const (
	recordRealName = "bwrap-real"
	recordArgsName = "bwrap-args"
)

// recordingBwrap reports whether the process is the recording bwrap: a
// copy of the bench with the real bwrap's path beside it.
func recordingBwrap() bool {
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(filepath.Dir(exe), recordRealName))
	return err == nil
}

// recordBwrap is the recording bwrap's main: it returns only on failure.
func recordBwrap() int {
	exe, err := os.Executable()
	if err == nil {
		err = recordAndExec(filepath.Dir(exe))
	}
	fmt.Fprintf(os.Stderr, "bwrap (the bench's recording copy): %v\n", err)
	return 1
}

// recordAndExec records the arguments of a bwrap given them on a
// descriptor (harness's other bwraps, the probe's and the session's
// namespace's, are not recorded) and execs the real one.
func recordAndExec(dir string) error {
	readPath, err := os.ReadFile(filepath.Join(dir, recordRealName))
	if err != nil {
		return err
	}
	path := strings.TrimSpace(string(readPath))
	argv := append([]string{"bwrap"}, os.Args[1:]...)
	if len(os.Args) < 3 || os.Args[1] != "--args" {
		return syscall.Exec(path, argv, os.Environ())
	}
	// A new open of the descriptor's file reads from its start and leaves
	// the offset bwrap reads from where it is.
	f, err := os.Open("/proc/self/fd/" + os.Args[2])
	if err != nil {
		return err
	}
	data, err := io.ReadAll(f)
	_ = f.Close()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, recordArgsName), data, 0o600); err != nil {
		return err
	}
	return syscall.Exec(path, argv, os.Environ())
}

// recorder is a directory holding the recording bwrap, outside harness's
// writable roots (harness runs no bwrap from inside one).
type recorder struct{ dir string }

// newRecorder makes the recording bwrap in a new directory beneath parent,
// executing realBwrap.
func newRecorder(parent, realBwrap string) (*recorder, error) {
	dir, err := os.MkdirTemp(parent, "bwrap-record-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	src, err := os.Open(exe)
	if err != nil {
		return nil, err
	}
	defer func() { _ = src.Close() }()
	dst, err := os.OpenFile(filepath.Join(dir, "bwrap"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(dst, src); err != nil {
		_ = dst.Close()
		return nil, err
	}
	if err := dst.Close(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, recordRealName), []byte(realBwrap), 0o644); err != nil {
		return nil, err
	}
	return &recorder{dir: dir}, nil
}

// env is environ with the recorder first in PATH.
func (r *recorder) env(environ []string) []string {
	out := make([]string, 0, len(environ)+1)
	path := r.dir
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = r.dir + string(os.PathListSeparator) + v
			continue
		}
		out = append(out, kv)
	}
	return append(out, "PATH="+path)
}

// last returns the command line of the last bwrap recorded: argv0, the
// arguments read from the descriptor in place of `--args FD`, then the
// rest (`--` and the command).
func (r *recorder) last(cmdline []string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(r.dir, recordArgsName))
	if err != nil {
		return nil, fmt.Errorf("the recording bwrap recorded nothing: %w", err)
	}
	if len(cmdline) < 3 || cmdline[1] != "--args" {
		return nil, errors.New("harness's bwrap was not given its arguments on a descriptor")
	}
	args := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	return append(append([]string{cmdline[0]}, args...), cmdline[3:]...), nil
}

func (r *recorder) remove() { _ = os.RemoveAll(r.dir) }
