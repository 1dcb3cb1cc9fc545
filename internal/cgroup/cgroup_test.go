//go:build linux

package cgroup_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/cgroup"
)

// helperEnv turns the test binary into a helper that waits for a byte on
// stdin and then allocates and touches helperMiBEnv MiB.
const (
	helperEnv    = "HARNESS_CGROUP_TEST_HELPER"
	helperMiBEnv = "HARNESS_CGROUP_TEST_MIB"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "alloc" {
		allocate()
		return
	}
	os.Exit(m.Run())
}

// allocate is the helper: it allocates only after the go-ahead, once it is
// in its group.
func allocate() {
	mib, err := strconv.Atoi(os.Getenv(helperMiBEnv))
	if err != nil {
		os.Exit(3)
	}
	var b [1]byte
	if _, err := os.Stdin.Read(b[:]); err != nil {
		os.Exit(4)
	}
	buf := make([]byte, mib<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	fmt.Println("allocated", mib, "MiB")
	os.Exit(0)
}

// openManager opens a Manager closed (and asserted closed) at the end of
// the test, or skips the test when Open refuses (an ordinary user, or no
// memory and pids controllers this process may use).
func openManager(t testing.TB) *cgroup.Manager {
	t.Helper()
	m, err := cgroup.Open()
	if err != nil {
		t.Skipf("cgroup.Open refused, so there is nothing to test on this machine as uid %d: %v", os.Geteuid(), err)
	}
	t.Cleanup(func() { assert.NoError(t, m.Close()) })
	return m
}

func newGroup(t testing.TB, m *cgroup.Manager, name string, l cgroup.Limits) *cgroup.Group {
	t.Helper()
	g, err := m.New(name, l)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, g.Delete()) })
	return g
}

// proc is a child started with a gate: `read go` (or the helper's read)
// holds it until goAhead, after it was added to its group.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Reader
	stderr *bytes.Buffer
	pid    int

	once    sync.Once
	waitErr error
}

// startIn starts cmd and adds it to g before it does anything.
func startIn(t testing.TB, g *cgroup.Group, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{cmd: cmd, stderr: &bytes.Buffer{}}
	var err error
	p.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	p.stdout, err = cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = p.stderr
	require.NoError(t, cmd.Start())
	p.pid = cmd.Process.Pid
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = p.wait()
	})
	require.NoError(t, g.Add(p.pid))
	return p
}

// shell is a /bin/sh that runs script once let go.
func shell(script string) *exec.Cmd {
	return exec.Command("/bin/sh", "-c", "read go; "+script)
}

func (p *proc) goAhead(t testing.TB) {
	t.Helper()
	_, err := p.stdin.Write([]byte("\n"))
	require.NoError(t, err)
	require.NoError(t, p.stdin.Close())
}

func (p *proc) wait() error {
	p.once.Do(func() { p.waitErr = p.cmd.Wait() })
	return p.waitErr
}

// killedBy asserts that err is the exit of a process killed by sig.
func killedBy(t testing.TB, err error, sig syscall.Signal) {
	t.Helper()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	assert.True(t, ws.Signaled() && ws.Signal() == sig, "exit status %v, want killed by %v", ws, sig)
}

// cgroupsOf parses /proc/<pid>/cgroup: controller (or "name=systemd") to
// path, the unified hierarchy under "".
func cgroupsOf(t testing.TB, pid int) map[string]string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	require.NoError(t, err)
	out := map[string]string{}
	for line := range strings.Lines(string(data)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		require.Len(t, parts, 3, line)
		for c := range strings.SplitSeq(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// assertIn asserts that pid is in the group name of m: for each controller
// the Manager uses, the test process's own cgroup path joined with
// harness-<pid>/name.
func assertIn(t testing.TB, m *cgroup.Manager, name string, pid int) {
	t.Helper()
	self := cgroupsOf(t, os.Getpid())
	got := cgroupsOf(t, pid)
	parent := fmt.Sprintf("harness-%d", os.Getpid())
	controllers := map[string][]string{"cgroup v1": {"memory", "pids"}, "cgroup v2": {""}}[m.Kind()]
	require.NotEmpty(t, controllers, m.Kind())
	for _, c := range controllers {
		assert.Equal(t, filepath.Join(self[c], parent, name), got[c], "pid %d, controller %q", pid, c)
	}
}

func assertGone(t testing.TB, dirs []string) {
	t.Helper()
	require.NotEmpty(t, dirs)
	for _, d := range dirs {
		assert.NoDirExists(t, d)
	}
}

// gone reports whether pid is dead (reaped, or a zombie awaiting it).
func gone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, after, ok := strings.Cut(string(data), ") ")
	return ok && strings.HasPrefix(after, "Z")
}

// procsOf reads the pids in g's cgroup.procs (of the memory hierarchy on
// v1).
func procsOf(t testing.TB, g *cgroup.Group) []int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cgroup.GroupDirs(g)[0], "cgroup.procs"))
	require.NoError(t, err)
	var pids []int
	for f := range strings.FieldsSeq(string(data)) {
		pid, err := strconv.Atoi(f)
		require.NoError(t, err)
		pids = append(pids, pid)
	}
	return pids
}

func TestOpenKind(t *testing.T) {
	m := openManager(t)
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs("/sys/fs/cgroup", &st))
	want := "cgroup v1"
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		want = "cgroup v2"
	}
	assert.Equal(t, want, m.Kind())
	for _, d := range cgroup.ParentDirs(m) {
		assert.DirExists(t, d)
		assert.Equal(t, fmt.Sprintf("harness-%d", os.Getpid()), filepath.Base(d))
	}
}

// A process added is in the group, so is what it forks afterwards; Delete
// kills both and removes the directories; a second Delete is a no-op.
func TestAddAndDelete(t *testing.T) {
	m := openManager(t)
	g := newGroup(t, m, "add", cgroup.Limits{})
	p := startIn(t, g, shell("sleep 30 </dev/null >/dev/null 2>&1 & echo $!; wait"))
	assertIn(t, m, "add", p.pid)
	p.goAhead(t)
	line, err := bufio.NewReader(p.stdout).ReadString('\n')
	require.NoError(t, err)
	child, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	assertIn(t, m, "add", child)
	st, err := g.Stats()
	require.NoError(t, err)
	assert.EqualValues(t, 2, st.Pids, "%+v", st)
	assert.Positive(t, st.MemoryBytes, "%+v", st)
	assert.False(t, st.MemoryCapHit() || st.PidsCapHit(), "%+v", st)

	dirs := cgroup.GroupDirs(g)
	require.NoError(t, g.Delete())
	assertGone(t, dirs)
	killedBy(t, p.wait(), syscall.SIGKILL)
	assert.Eventually(t, func() bool { return gone(child) }, 5*time.Second, 10*time.Millisecond, "sleep %d survived", child)

	assert.NoError(t, g.Delete())
	_, err = g.Stats()
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorIs(t, g.Add(p.pid), fs.ErrNotExist)
}

// A pids cap of 20: a shell forking 100 sleeps fails at the cap (dash exits
// on its first failed fork), 19 sleeps run beside it, and Stats says so.
func TestPidsCap(t *testing.T) {
	m := openManager(t)
	g := newGroup(t, m, "pids", cgroup.Limits{Pids: 20})
	p := startIn(t, g, shell(`i=0; while [ $i -lt 100 ]; do sleep 5 </dev/null >/dev/null 2>&1 & echo started; i=$((i+1)); done`))
	p.goAhead(t)
	out, err := io.ReadAll(p.stdout)
	require.NoError(t, err)
	werr := p.wait()
	started := strings.Count(string(out), "started")
	t.Logf("%d sleeps started; shell: %v, %q", started, werr, p.stderr.String())
	assert.Error(t, werr, "the shell forked 100 times under a cap of 20")
	assert.Contains(t, strings.ToLower(p.stderr.String()), "fork")
	assert.LessOrEqual(t, started, 19)
	assert.Positive(t, started)

	running := procsOf(t, g)
	assert.LessOrEqual(t, len(running), 20)
	assert.Len(t, running, started, "the sleeps outlive the shell")
	st, err := g.Stats()
	require.NoError(t, err)
	t.Logf("stats: %+v", st)
	assert.LessOrEqual(t, st.Pids, int64(20))
	assert.True(t, st.PidsCapHit(), "%+v", st)
	assert.False(t, st.MemoryCapHit(), "%+v", st)

	dirs := cgroup.GroupDirs(g)
	require.NoError(t, g.Delete())
	assertGone(t, dirs)
	for _, pid := range running {
		assert.Eventually(t, func() bool { return gone(pid) }, 5*time.Second, 10*time.Millisecond, "sleep %d survived", pid)
	}
}

// A memory cap of 64 MiB: a child touching 256 MiB is OOM-killed, and
// Stats reports the cap hit.
func TestMemoryCap(t *testing.T) {
	const capBytes = 64 << 20
	m := openManager(t)
	g := newGroup(t, m, "memory", cgroup.Limits{MemoryBytes: capBytes})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=alloc", helperMiBEnv+"=256")
	p := startIn(t, g, cmd)
	assertIn(t, m, "memory", p.pid)
	p.goAhead(t)
	out, err := io.ReadAll(p.stdout)
	require.NoError(t, err)
	killedBy(t, p.wait(), syscall.SIGKILL)
	assert.NotContains(t, string(out), "allocated")

	st, err := g.Stats()
	require.NoError(t, err)
	t.Logf("stats: %+v", st)
	assert.True(t, st.MemoryCapHit(), "%+v", st)
	assert.GreaterOrEqual(t, st.OOMKills, int64(1), "%+v", st)
	// The kernel lets a task being OOM-killed charge a few pages past the cap.
	assert.InDelta(t, capBytes, st.MemoryPeakBytes, 1<<20, "%+v", st)

	dirs := cgroup.GroupDirs(g)
	require.NoError(t, g.Delete())
	assertGone(t, dirs)
}

// Two Managers in parallel share the parent; their groups' caps, members
// and deletion do not touch each other; the last Close removes the parent.
func TestParallelManagers(t *testing.T) {
	m1, err := cgroup.Open()
	if err != nil {
		t.Skipf("cgroup.Open refused, so there is nothing to test on this machine as uid %d: %v", os.Geteuid(), err)
	}
	t.Cleanup(func() { _ = m1.Close() }) // on failure; a second Close is a no-op
	m2, err := cgroup.Open()
	require.NoError(t, err)
	t.Cleanup(func() { _ = m2.Close() })
	parent := cgroup.ParentDirs(m1)
	assert.Equal(t, parent, cgroup.ParentDirs(m2))

	_, err = m2.New("a", cgroup.Limits{})
	require.NoError(t, err)
	_, err = m1.New("a", cgroup.Limits{})
	require.ErrorIs(t, err, fs.ErrExist, "a name is one group's across Managers")

	// Fork 30 sleeps in each, concurrently: a is capped at 5 tasks, b at 40.
	script := `i=0; while [ $i -lt 30 ]; do sleep 30 </dev/null >/dev/null 2>&1 & echo started; i=$((i+1)); done; echo done; exec sleep 30 >/dev/null`
	type run struct {
		g       *cgroup.Group
		p       *proc
		started int
	}
	var a, b run
	a.g, err = m1.New("pa", cgroup.Limits{Pids: 5})
	require.NoError(t, err)
	b.g, err = m2.New("pb", cgroup.Limits{Pids: 40, MemoryBytes: 64 << 20})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for _, r := range []*run{&a, &b} {
		r.p = startIn(t, r.g, shell(script))
		wg.Go(func() {
			_, _ = r.p.stdin.Write([]byte("\n"))
			sc := bufio.NewScanner(r.p.stdout)
			for sc.Scan() && sc.Text() != "done" {
				r.started++
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 4, a.started, "a: 4 sleeps and the shell")
	assert.Equal(t, 30, b.started, "b: not capped by a's cap")
	sa, err := a.g.Stats()
	require.NoError(t, err)
	sb, err := b.g.Stats()
	require.NoError(t, err)
	assert.True(t, sa.PidsCapHit(), "%+v", sa)
	assert.False(t, sb.PidsCapHit(), "%+v", sb)
	assert.EqualValues(t, 31, sb.Pids)

	// Deleting a, then closing its Manager, leaves b alone.
	require.Error(t, a.p.wait(), "a's shell exits on its failed fork")
	aLeft := procsOf(t, a.g)
	assert.Len(t, aLeft, 4, "a's sleeps")
	for _, pid := range aLeft {
		assert.NotContains(t, procsOf(t, b.g), pid)
	}
	require.NoError(t, a.g.Delete())
	for _, pid := range aLeft {
		assert.Eventually(t, func() bool { return gone(pid) }, 5*time.Second, 10*time.Millisecond, "sleep %d survived", pid)
	}
	require.NoError(t, m1.Close())
	for _, d := range parent {
		assert.DirExists(t, d, "m2 still uses the parent")
	}
	sb2, err := b.g.Stats()
	require.NoError(t, err)
	assert.Equal(t, sb.Pids, sb2.Pids, "b lost processes")
	assert.False(t, gone(b.p.pid))

	// m2's Close deletes its groups, b's processes with them, and the parent.
	bDirs := cgroup.GroupDirs(b.g)
	require.NoError(t, m2.Close())
	killedBy(t, b.p.wait(), syscall.SIGKILL)
	assertGone(t, bDirs)
	assertGone(t, parent)
	assert.NoError(t, m2.Close(), "Close twice")
	assert.NoError(t, b.g.Delete(), "deleted by Close")
}

func TestNewRefuses(t *testing.T) {
	m := openManager(t)
	for _, name := range []string{"", ".", "..", "a/b", "cgroup.procs", "memory.max", "a b", strings.Repeat("x", 101)} {
		_, err := m.New(name, cgroup.Limits{})
		assert.ErrorContains(t, err, "invalid group name", "%q", name)
	}
	_, err := m.New("neg", cgroup.Limits{Pids: -1})
	assert.ErrorContains(t, err, "negative limit")
	_, err = m.New("neg", cgroup.Limits{MemoryBytes: -1})
	assert.ErrorContains(t, err, "negative limit")

	g := newGroup(t, m, "twice", cgroup.Limits{})
	_, err = m.New("twice", cgroup.Limits{})
	assert.ErrorIs(t, err, fs.ErrExist)
	require.NoError(t, g.Delete())
	g2 := newGroup(t, m, "twice", cgroup.Limits{Pids: 3})
	require.NoError(t, g2.Delete())
}

// Close deletes the groups left (killing their processes), removes the
// parent, and then refuses New.
func TestCloseDeletesLeftovers(t *testing.T) {
	m, err := cgroup.Open()
	if err != nil {
		t.Skipf("cgroup.Open refused, so there is nothing to test on this machine as uid %d: %v", os.Geteuid(), err)
	}
	t.Cleanup(func() { _ = m.Close() }) // on failure; a second Close is a no-op
	g, err := m.New("left", cgroup.Limits{Pids: 10})
	require.NoError(t, err)
	p := startIn(t, g, shell("sleep 30"))
	p.goAhead(t)
	dirs, parent := cgroup.GroupDirs(g), cgroup.ParentDirs(m)
	require.NoError(t, m.Close())
	killedBy(t, p.wait(), syscall.SIGKILL)
	assertGone(t, dirs)
	assertGone(t, parent)
	_, err = m.New("after", cgroup.Limits{})
	assert.ErrorIs(t, err, cgroup.ErrClosed)
	assert.NoError(t, m.Close())

	// A new Open makes the parent again.
	m2 := openManager(t)
	for _, d := range cgroup.ParentDirs(m2) {
		assert.DirExists(t, d)
	}
}
