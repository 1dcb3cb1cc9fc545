// Package cgroup caps the memory and the number of tasks of one command's
// process tree with a cgroup of its own, through the maintained library
// github.com/containerd/cgroups/v3. Open makes a parent group named
// "harness-<pid>" beneath the cgroup this process is in (per controller: its
// own path in /proc/self/cgroup); New makes one leaf group per command under
// it with the command's Limits; Add moves the command's first process in
// before it forks; Stats reads usage and whether a cap was hit; Delete kills
// what is left and removes the group; Close removes the parent.
//
// cgroup v1 (legacy or hybrid mounts: the memory and pids controllers in
// hierarchies of their own under /sys/fs/cgroup, as on the CI machines)
// needs both hierarchies mounted and writable, in practice root outside a
// user namespace. The memory cap covers memory plus swap
// (memory.memsw.limit_in_bytes) only when the kernel accounts swap
// (swapaccount=1); otherwise swap is not capped.
//
// cgroup v2 (unified mount, what systemd machines run) needs memory and pids
// in the current cgroup's cgroup.controllers (delegated to this user, or
// root) and enabled, or enableable, in its cgroup.subtree_control. The kernel
// enables a domain controller for a cgroup's children only while the cgroup
// holds no process, except the root cgroup, and this process is in the
// current cgroup: so Open succeeds on v2 when this process runs in the root
// cgroup, and otherwise returns an error saying so (it never moves this
// process). The memory cap is memory.max with memory.swap.max 0 where swap is
// accounted. Delete uses cgroup.kill (Linux 5.14 and later).
//
// What it does not cover: CPU, I/O and disk space; memory charged before Add
// (v1 and v2 leave it charged to the old group), and processes the added one
// forked before Add; systemd-managed v2 machines where an ordinary user's
// only delegated subtree is the one its session runs in (creating a
// transient scope through systemd's D-Bus API is the way there, not done
// here); stale "harness-<pid>" groups left by a process that died without
// Close (they are reused, not removed, when a later process gets the same
// pid).
package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"sync"
	"time"
)

// Limits caps one command's tree. Zero fields mean no cap; negative fields
// make New fail.
type Limits struct {
	// MemoryBytes caps the memory charged to the group (anonymous and
	// file-backed pages, and the kernel memory the controller accounts), in
	// bytes; swap is capped to the same total where the kernel accounts
	// swap. Past it the kernel reclaims, then OOM-kills a process of the
	// group.
	MemoryBytes int64
	// Pids caps the number of tasks in the group, threads included (each
	// thread counts as one); a fork or clone past it fails with EAGAIN.
	Pids int64
}

// Stats is a group's usage and how often its caps were hit, for reporting.
type Stats struct {
	// MemoryBytes is the memory charged to the group now, in bytes (v1
	// memory.usage_in_bytes, v2 memory.current).
	MemoryBytes int64
	// MemoryPeakBytes is the highest MemoryBytes since the group was made,
	// in bytes (v1 memory.max_usage_in_bytes, v2 memory.peak; 0 on v2
	// kernels before 5.19).
	MemoryPeakBytes int64
	// MemoryCapHits counts the times the group's charge reached its memory
	// cap (v1 memory.failcnt, or memory.memsw.failcnt when larger; v2 the
	// "max" count of memory.events). The kernel reclaims first, so a hit
	// alone need not have harmed the command. Some v1 kernels leave failcnt
	// at 0 even when the cap OOM-kills (Linux 6.18 seen): OOMKills is the
	// count to trust there.
	MemoryCapHits int64
	// OOMKills counts the processes of the group the OOM killer killed
	// because of the cap (v1 oom_kill of memory.oom_control, Linux 4.13 and
	// later; v2 oom_kill of memory.events).
	OOMKills int64
	// Pids is the number of tasks (processes and threads) in the group now
	// (pids.current).
	Pids int64
	// PidsCapHits counts the forks and clones refused because of the pids
	// cap (the "max" count of pids.events).
	PidsCapHits int64
}

// MemoryCapHit reports whether the group's memory cap was reached at least
// once (MemoryCapHits or OOMKills above zero).
func (s Stats) MemoryCapHit() bool { return s.MemoryCapHits > 0 || s.OOMKills > 0 }

// PidsCapHit reports whether a fork or clone was refused because of the
// pids cap.
func (s Stats) PidsCapHit() bool { return s.PidsCapHits > 0 }

// ErrClosed is returned by Manager.New after Close.
var ErrClosed = errors.New("cgroup: manager closed")

// backend is one cgroup version's parent group.
type backend interface {
	kind() string
	newGroup(name string, l Limits) (groupBackend, error)
	// remove removes the parent group; it fails while groups remain.
	remove() error
}

// groupBackend is one cgroup version's per-command group.
type groupBackend interface {
	add(pid int) error
	stats() (Stats, error)
	// procsFiles are the group's cgroup.procs files (one per hierarchy).
	procsFiles() []string
	// killFile is the group's cgroup.kill, or "" when it has none.
	killFile() string
	// remove removes the group's directories; it fails while processes
	// remain.
	remove() error
	// dirs are the group's directories, one per hierarchy.
	dirs() []string
}

// Manager creates per-command groups beneath the cgroup this process is in,
// under a parent group named "harness-<pid>" that all Managers of this
// process share (the last Close removes it). Its methods are safe for
// concurrent use.
type Manager struct {
	key    string
	b      backend
	mu     sync.Mutex
	groups map[*Group]struct{}
	closed bool
}

// Group is one command's cgroup. Its methods are safe for concurrent use.
type Group struct {
	m       *Manager
	name    string
	b       groupBackend
	mu      sync.Mutex
	deleted bool
}

// shared counts the Managers of this process per parent group, so that two
// Managers share "harness-<pid>" and only the last Close removes it.
var shared = struct {
	sync.Mutex
	parents map[string]*sharedParent
}{parents: map[string]*sharedParent{}}

type sharedParent struct {
	b    backend
	refs int
}

// Open returns a Manager when this process may create cgroups with the
// memory and pids controllers beneath its own cgroup: on cgroup v1, both
// hierarchies mounted and writable; on cgroup v2, the current cgroup
// writable with memory and pids in its cgroup.controllers and enabled, or
// enableable, in its cgroup.subtree_control (Open enables them; it only ever
// creates groups without processes of their own or leaf groups). It creates
// (or reuses) the parent group "harness-<pid>". The error says why not
// (cgroups not mounted, a controller missing or not delegated, permission
// denied, the no-internal-process rule); the caller then falls back to
// rlimits.
func Open() (*Manager, error) {
	return open(detect)
}

// open shares the parent group of the backend that detectFn picks.
func open(detectFn func() (key string, create func() (backend, error), err error)) (*Manager, error) {
	key, create, err := detectFn()
	if err != nil {
		return nil, err
	}
	shared.Lock()
	defer shared.Unlock()
	p := shared.parents[key]
	if p == nil {
		b, err := create()
		if err != nil {
			return nil, err
		}
		p = &sharedParent{b: b}
		shared.parents[key] = p
	}
	p.refs++
	return &Manager{key: key, b: p.b, groups: map[*Group]struct{}{}}, nil
}

// Kind returns "cgroup v1" or "cgroup v2": the cgroup version the Manager's
// groups are in.
func (m *Manager) Kind() string { return m.b.kind() }

// validName is what New accepts as a group's name: one path element without
// dots, so never "." or ".." nor the name of a cgroup's interface file
// ("cgroup.procs", "memory.max"; v1's "tasks" and "notify_on_release" are
// taken and fail as such).
var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)

// New makes a group named name (1 to 100 of A-Z a-z 0-9 _ -) under the
// Manager's parent with the limits l: memory as the limit in bytes with swap
// limited to the same where the kernel accounts swap (v1
// memory.limit_in_bytes and memory.memsw.limit_in_bytes, v2 memory.max and
// memory.swap.max 0), pids as pids.max. It fails when the name is invalid or
// taken (by a group of any Manager, or one left behind: fs.ErrExist), when a
// limit is negative, when the Manager is closed (ErrClosed), or when the
// kernel refuses a directory or a limit; a group it could not finish is
// removed.
func (m *Manager) New(name string, l Limits) (*Group, error) {
	if !validName.MatchString(name) {
		return nil, fmt.Errorf("cgroup: invalid group name %q: want 1 to 100 of A-Z a-z 0-9 _ -", name)
	}
	if l.MemoryBytes < 0 || l.Pids < 0 {
		return nil, fmt.Errorf("cgroup: negative limit in %+v", l)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	gb, err := m.b.newGroup(name, l)
	if err != nil {
		return nil, err
	}
	g := &Group{m: m, name: name, b: gb}
	m.groups[g] = struct{}{}
	return g, nil
}

// Close deletes the groups of this Manager not yet deleted (as Delete does)
// and, when no other Manager of this process is open, removes the parent
// group. It fails when a group or the parent cannot be removed (processes
// that survive SIGKILL for killTimeout, or a group another program made
// under the parent); calling it again retries what failed, and returns nil
// once everything is removed.
func (m *Manager) Close() error {
	m.mu.Lock()
	wasClosed := m.closed
	m.closed = true
	groups := make([]*Group, 0, len(m.groups))
	for g := range m.groups {
		groups = append(groups, g)
	}
	m.mu.Unlock()
	var errs []error
	for _, g := range groups {
		if err := g.Delete(); err != nil {
			errs = append(errs, err)
		}
	}
	shared.Lock()
	defer shared.Unlock()
	p := shared.parents[m.key]
	if p == nil || p.b != m.b {
		return errors.Join(errs...) // the parent is already removed
	}
	if !wasClosed {
		p.refs--
	}
	if p.refs > 0 {
		return errors.Join(errs...)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := p.b.remove(); err != nil {
		return fmt.Errorf("cgroup: removing parent group: %w", err)
	}
	delete(shared.parents, m.key)
	return nil
}

// Add moves the process pid into the group: that process alone (its
// thread group, through cgroup.procs), not its children. Processes it
// forks afterwards are born in the group, so add a command before it forks
// (for example while it waits for a go-ahead on a pipe). Memory it was
// charged before stays charged to its old group. It fails when the group
// is deleted (fs.ErrNotExist), the process is gone (ESRCH), or the kernel
// refuses the move (EACCES, EBUSY, EINVAL after retries); on cgroup v1 the
// process may then be in one of the two hierarchies only, which Delete still
// handles.
func (g *Group) Add(pid int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return fmt.Errorf("cgroup: group %q: %w", g.name, fs.ErrNotExist)
	}
	if err := g.b.add(pid); err != nil {
		return fmt.Errorf("cgroup: adding pid %d to group %q: %w", pid, g.name, err)
	}
	return nil
}

// Stats reads the group's memory usage and task count and how often its
// caps were hit. It fails when the group is deleted (fs.ErrNotExist) or a
// controller file cannot be read or parsed.
func (g *Group) Stats() (Stats, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return Stats{}, fmt.Errorf("cgroup: group %q: %w", g.name, fs.ErrNotExist)
	}
	s, err := g.b.stats()
	if err != nil {
		return Stats{}, fmt.Errorf("cgroup: stats of group %q: %w", g.name, err)
	}
	return s, nil
}

// Delete kills every process left in the group with SIGKILL (v2: by
// cgroup.kill when the kernel has it; v1, and v2 without it: by repeated
// rounds over cgroup.procs, without the freezer, each signal sent through a
// pidfd to a process read again in the group after the pidfd was opened, so
// a reused pid is never signaled), waits up to killTimeout for the group to
// empty and removes its directories. It fails when processes remain after
// killTimeout (in uninterruptible sleep, say) or a directory cannot be
// removed; the group then stays and Delete may be called again. Calling it
// on a deleted group returns nil.
func (g *Group) Delete() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return nil
	}
	if err := killAll(g.b, killTimeout); err != nil {
		return fmt.Errorf("cgroup: deleting group %q: %w", g.name, err)
	}
	if err := g.b.remove(); err != nil {
		return fmt.Errorf("cgroup: deleting group %q: %w", g.name, err)
	}
	g.deleted = true
	g.m.mu.Lock()
	delete(g.m.groups, g)
	g.m.mu.Unlock()
	return nil
}

// killTimeout bounds how long Delete waits for killed processes to leave
// the group.
const killTimeout = 5 * time.Second

// parentName is the name of this process's parent group.
func parentName() string { return fmt.Sprintf("harness-%d", os.Getpid()) }
