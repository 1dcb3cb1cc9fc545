package subproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The helper's descriptors, set up by Run: the spec, the status pipe, and
// the helper's own program, which starts the confining stage by descriptor.
const (
	specFD   = 3
	statusFD = 4
	helperFD = 5
)

// shell runs every command.
const shell = "/bin/sh"

// Main is the helper's entry point: the binary calls it first when
// IsHelper(os.Args), and exits with its result. It reads the Spec from
// descriptor 3, makes itself a child subreaper, applies the confinement,
// runs the command and reaps the whole tree, and writes the Status to
// descriptor 4. It returns 0 when a status was written, 125 otherwise.
func Main() int {
	if len(os.Args) > 2 {
		switch os.Args[2] {
		case confineStage:
			return confineAndExec()
		case bwrapStage:
			return stageMain()
		case diagStage:
			return diagMain()
		case directStage:
			return directMain(os.Args[3:])
		case janitorStage:
			return janitorMain()
		}
	}
	status := run()
	f := os.NewFile(statusFD, "status")
	if f == nil || json.NewEncoder(f).Encode(status) != nil {
		return 125
	}
	return 0
}

func run() Status {
	// The status pipe and the helper's program never reach the command.
	unix.CloseOnExec(statusFD)
	unix.CloseOnExec(helperFD)
	unix.CloseOnExec(termFD) // when there is one
	f := os.NewFile(specFD, "spec")
	if f == nil {
		return Status{Error: "the helper was started without its spec"}
	}
	var spec Spec
	err := json.NewDecoder(f).Decode(&spec)
	_ = f.Close()
	if err != nil {
		return Status{Error: "the helper could not read its spec: " + err.Error()}
	}
	// Stop requests are caught before anything starts, so none is lost.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		// Fail closed: without it setsid descendants would outlive a kill.
		return Status{Error: "cannot become a child subreaper: " + err.Error()}
	}
	if !filepath.IsAbs(spec.Dir) {
		return Status{Error: fmt.Sprintf("workdir %q is not absolute", spec.Dir)}
	}
	stdio, sys, err := commandStdio(spec.Terminal)
	if err != nil {
		return Status{Error: err.Error()}
	}
	var pid int
	if spec.Confine != nil {
		pid, err = startConfined(spec, stdio, sys)
	} else {
		var proc *os.Process
		proc, err = os.StartProcess(shell, []string{"sh", "-c", spec.Command}, &os.ProcAttr{
			Dir: spec.Dir, Env: spec.Env, Files: stdio, Sys: sys,
		})
		if err == nil {
			pid = proc.Pid
		}
	}
	if spec.Terminal != nil {
		// The command holds the terminal now.
		_ = stdio[0].Close()
	}
	if err != nil {
		return Status{Error: err.Error()}
	}
	return reap(pid, stop)
}

// commandStdio returns the helper's stdin, stdout and stderr for the
// command, or, with term, the other side of a new terminal (makeTerminal,
// from the host's devpts) and the start attributes that make it the
// command's controlling terminal in a session of its own.
func commandStdio(term *Winsize) ([]*os.File, *syscall.SysProcAttr, error) {
	if term == nil {
		return []*os.File{os.Stdin, os.Stdout, os.Stderr}, nil, nil
	}
	tty, err := makeTerminal(*term)
	if err != nil {
		return nil, nil, err
	}
	return []*os.File{tty, tty, tty}, &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}, nil
}

// confineStage is the helper's second argument for the stage that confines
// itself and execs the shell. The helper itself stays unconfined, outside
// the command's Landlock domain, so it can signal every descendant (a
// domain scoped for signals refuses signals from a sibling domain, and
// restricting a multi-threaded Go process thread by thread makes one domain
// per thread).
const confineStage = "confine"

// startConfined starts the confining stage with the spec on its descriptor
// 3 and an error pipe on 4, and returns its pid once it has exec'd the shell
// (the error pipe closes on exec) or the error it reported.
func startConfined(spec Spec, stdio []*os.File, sys *syscall.SysProcAttr) (int, error) {
	// Never the path the helper came from: only the program it was run
	// from (close-on-exec, yet open when execve reads the path), which a
	// command cannot replace.
	self := execPath(helperFD)
	specR, specW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	attr := &os.ProcAttr{Dir: "/", Env: []string{}, Files: append(slices.Clone(stdio), specR, errW), Sys: sys}
	c := *spec.Confine
	if MountNamespace() {
		// The stage carves the protected paths out and hides the host's
		// terminals in a mount namespace of its own; without one the
		// protected paths are left to Landlock's roots.
		attr.Sys = namespaceAttr()
		if sys != nil {
			attr.Sys.Setsid, attr.Sys.Setctty, attr.Sys.Ctty = sys.Setsid, sys.Setctty, sys.Ctty
		}
		c.PrivateMounts = true
	} else {
		c.ReadOnlyPaths, c.PrivateMounts = nil, false
	}
	spec.Confine = &c
	proc, err := os.StartProcess(self, []string{self, HelperArg, confineStage}, attr)
	_ = specR.Close()
	_ = errW.Close()
	if err != nil {
		_ = specW.Close()
		_ = errR.Close()
		return 0, err
	}
	_ = json.NewEncoder(specW).Encode(spec)
	_ = specW.Close()
	msg, _ := io.ReadAll(errR)
	_ = errR.Close()
	if len(msg) > 0 {
		_, _ = proc.Wait()
		return 0, errors.New(string(msg))
	}
	return proc.Pid, nil
}

// confineAndExec is the confining stage: it reads the spec, restricts
// itself (read-only bind mounts of the protected paths in its private mount
// namespace, then Landlock and seccomp) and execs the shell; on any failure it writes the reason to its
// error pipe and exits 126 without running the command (fail closed).
func confineAndExec() int {
	errPipe := os.NewFile(statusFD, "error")
	fail := func(msg string) int {
		if errPipe != nil {
			_, _ = errPipe.WriteString(msg)
		}
		return 126
	}
	if errPipe == nil {
		return 126
	}
	unix.CloseOnExec(statusFD)
	f := os.NewFile(specFD, "spec")
	var spec Spec
	if f == nil || json.NewDecoder(f).Decode(&spec) != nil || spec.Confine == nil {
		return fail("the confining stage could not read its spec")
	}
	_ = f.Close()
	if err := os.Chdir(spec.Dir); err != nil {
		return fail("cannot enter the workdir: " + err.Error())
	}
	if spec.Confine.PrivateMounts {
		if err := carveOut(spec.Confine.ReadOnlyPaths); err != nil {
			return fail("cannot make the protected paths read-only: " + err.Error())
		}
		own := ""
		if spec.Terminal != nil {
			own = ownTerminal()
		}
		if err := hideTerminals(own); err != nil {
			return fail("cannot hide the host's terminals: " + err.Error())
		}
	}
	if err := dropAmbient(); err != nil {
		return fail("cannot drop the stage's capabilities: " + err.Error())
	}
	if err := confine(*spec.Confine); err != nil {
		// Fail closed: a command that cannot be confined never runs.
		return fail(err.Error())
	}
	defaultSignals()
	err := unix.Exec(shell, []string{"sh", "-c", spec.Command}, spec.Env)
	return fail("cannot start " + shell + ": " + err.Error())
}

// reap waits for the shell and every descendant reparented to the helper.
// When the shell ends, or a stop is asked, every live descendant is killed;
// the status is the shell's.
func reap(shellPid int, stop <-chan os.Signal) Status {
	st := Status{Started: true}
	shellDone := make(chan unix.WaitStatus, 1)
	go func() {
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, 0, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return // ECHILD: nothing left to reap
			}
			if pid == shellPid {
				shellDone <- ws
			}
		}
	}()
	var ws unix.WaitStatus
	select {
	case ws = <-shellDone:
	case <-stop:
		st.Stopped = true
		st.Survivors = killDescendants()
		ws = <-shellDone
	}
	// The command's lifetime bounds its tree: background processes left
	// behind are killed too, so none keeps the output pipes open.
	if n := killDescendants(); n > st.Survivors {
		st.Survivors = n
	}
	st.ExitCode = ws.ExitStatus()
	if ws.Signaled() {
		st.ExitCode = -1
		st.Signal = unix.SignalName(ws.Signal())
	}
	return st
}

// killDescendants sends SIGKILL to every live descendant of the helper,
// scanning /proc again after each round (a killed process's children are
// reparented to the helper, a subreaper, and found by the next scan), and
// returns how many are still alive after maxKillRounds.
func killDescendants() int {
	self := os.Getpid()
	for range maxKillRounds {
		live := descendants(self)
		if len(live) == 0 {
			return 0
		}
		for _, pid := range live {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		time.Sleep(killRoundPause)
	}
	return len(descendants(self))
}

// descendants returns the pids of root's live (not zombie) descendants, read
// from /proc.
func descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	live := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, state, ok := statOf(pid)
		if !ok {
			continue
		}
		children[ppid] = append(children[ppid], pid)
		live[pid] = state != 'Z' && state != 'X'
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			queue = append(queue, c)
			if live[c] {
				out = append(out, c)
			}
		}
	}
	return out
}

// statOf returns the parent pid and the state letter of pid from
// /proc/PID/stat, whose second field (the command name, in parentheses) may
// itself contain spaces and parentheses.
func statOf(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 2 || len(fields[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	if err != nil {
		return 0, 0, false
	}
	return ppid, fields[0][0], true
}

// signalTree sends sig to every live descendant of root (host pids, found
// in /proc), not to root itself: the helper or the sandbox's init, which
// the caller stops its own way.
func signalTree(root int, sig syscall.Signal) {
	for _, pid := range descendants(root) {
		_ = unix.Kill(pid, sig)
	}
}
