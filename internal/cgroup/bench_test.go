//go:build linux

package cgroup_test

import (
	"fmt"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/cgroup"
)

// BenchmarkLifecycle times each step a command's group goes through:
//
//	go test -run '^$' -bench Lifecycle ./internal/cgroup/
//
// open and close: Open, and Close, with no other Manager open (the parent
// group made, and removed, each time); new: New with both caps;
// delete-empty: Delete of a group without processes; add: Add of a sleeping process, alternating between two
// groups; delete-1proc: Delete of a group holding one sleeping process
// (SIGKILL, wait for it to leave, remove), the start of the process not
// timed.
func BenchmarkLifecycle(b *testing.B) {
	limits := cgroup.Limits{MemoryBytes: 256 << 20, Pids: 64}
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			m, err := cgroup.Open()
			if err != nil {
				b.Skipf("cgroup.Open refused: %v", err)
			}
			b.StopTimer()
			require.NoError(b, m.Close())
			b.StartTimer()
		}
	})
	b.Run("close", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			m, err := cgroup.Open()
			if err != nil {
				b.Skipf("cgroup.Open refused: %v", err)
			}
			b.StartTimer()
			require.NoError(b, m.Close())
		}
	})
	b.Run("new", func(b *testing.B) {
		m := openManager(b)
		i := 0
		for b.Loop() {
			g, err := m.New(fmt.Sprintf("n%d", i), limits)
			require.NoError(b, err)
			b.StopTimer()
			require.NoError(b, g.Delete())
			b.StartTimer()
			i++
		}
	})
	b.Run("delete-empty", func(b *testing.B) {
		m := openManager(b)
		i := 0
		for b.Loop() {
			b.StopTimer()
			g, err := m.New(fmt.Sprintf("e%d", i), limits)
			require.NoError(b, err)
			b.StartTimer()
			require.NoError(b, g.Delete())
			i++
		}
	})
	b.Run("add", func(b *testing.B) {
		m := openManager(b)
		g := [2]*cgroup.Group{newGroup(b, m, "add0", limits), newGroup(b, m, "add1", limits)}
		cmd := exec.Command("sleep", "1000")
		require.NoError(b, cmd.Start())
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		i := 0
		for b.Loop() {
			require.NoError(b, g[i%2].Add(cmd.Process.Pid))
			i++
		}
	})
	b.Run("delete-1proc", func(b *testing.B) {
		m := openManager(b)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			g, err := m.New(fmt.Sprintf("d%d", i), limits)
			require.NoError(b, err)
			cmd := exec.Command("sleep", "1000")
			require.NoError(b, cmd.Start())
			require.NoError(b, g.Add(cmd.Process.Pid))
			b.StartTimer()
			require.NoError(b, g.Delete())
			b.StopTimer()
			_ = cmd.Wait()
			b.StartTimer()
		}
	})
}
