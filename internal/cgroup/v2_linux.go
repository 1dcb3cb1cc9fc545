package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/containerd/cgroups/v3/cgroup2"
)

// requiredControllers are the v2 controllers a Manager's groups get.
var requiredControllers = []string{"memory", "pids"}

// v2Backend is the parent group in the unified hierarchy at mount.
type v2Backend struct {
	parent *cgroup2.Manager
	dir    string   // the parent's directory
	need   []string // controllers each group gets (requiredControllers outside tests)
	swap   bool     // the kernel accounts swap: memory.swap.max exists
}

// openV2 makes the parent group beneath this process's cgroup in the
// unified hierarchy mounted at mount, with the controllers need enabled for
// its children.
func openV2(mount string, need []string) (backend, error) {
	cur, err := cgroup2.NestedGroupPath("")
	if err != nil {
		return nil, fmt.Errorf("cgroup v2: this process's cgroup: %w", err)
	}
	curDir := filepath.Join(mount, cur)
	have, err := readFields(filepath.Join(curDir, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	if missing := without(need, have); len(missing) > 0 {
		return nil, fmt.Errorf("cgroup v2: controllers %s not available in %s (its cgroup.controllers has %q): not delegated to it",
			strings.Join(missing, ", "), curDir, strings.Join(have, " "))
	}
	enabled, err := readFields(filepath.Join(curDir, "cgroup.subtree_control"))
	if err != nil {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	if missing := without(need, enabled); len(missing) > 0 {
		if err := enable(curDir, missing); err != nil {
			return nil, err
		}
	}
	// The parent holds no process, so it may enable controllers for the
	// leaf groups beneath it (New enables them on the way down).
	parentGroup := filepath.Join(cur, parentName())
	removeStale(filepath.Join(mount, parentGroup))
	parent, err := cgroup2.NewManager(mount, parentGroup, &cgroup2.Resources{})
	if err != nil {
		return nil, fmt.Errorf("cgroup v2: creating %s: %w%s", filepath.Join(mount, parentGroup), err, permissionHint(err))
	}
	b := &v2Backend{parent: parent, dir: filepath.Join(mount, parentGroup), need: need}
	if _, err := os.Stat(filepath.Join(b.dir, "memory.swap.max")); err == nil {
		b.swap = true
	}
	return b, nil
}

// enable enables controllers in dir's cgroup.subtree_control, saying why
// the kernel refused.
func enable(dir string, controllers []string) error {
	plus := make([]string, len(controllers))
	for i, c := range controllers {
		plus[i] = "+" + c
	}
	file := filepath.Join(dir, "cgroup.subtree_control")
	err := os.WriteFile(file, []byte(strings.Join(plus, " ")), 0)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EBUSY):
		return fmt.Errorf("cgroup v2: cannot enable %s in %s: the cgroup holds processes, this one among them, and "+
			"the kernel enables controllers for the children only of a cgroup without processes of its own "+
			"(or of the root cgroup): %w", strings.Join(controllers, ", "), file, err)
	default:
		return fmt.Errorf("cgroup v2: cannot enable %s in %s: %w%s", strings.Join(controllers, ", "), file, err, permissionHint(err))
	}
}

// permissionHint explains a permission error: a cgroup tree neither
// writable as root nor delegated to this user.
func permissionHint(err error) string {
	if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
		return fmt.Sprintf(" (needs root, or this cgroup subtree delegated to uid %d)", os.Geteuid())
	}
	return ""
}

func (*v2Backend) kind() string { return "cgroup v2" }

func (b *v2Backend) newGroup(name string, l Limits) (groupBackend, error) {
	res := &cgroup2.Resources{}
	if slices.Contains(b.need, "memory") {
		res.Memory = &cgroup2.Memory{}
	}
	if slices.Contains(b.need, "pids") {
		res.Pids = &cgroup2.Pids{}
	}
	if l.MemoryBytes > 0 {
		if res.Memory == nil {
			return nil, errors.New("cgroup v2: no memory controller for a memory cap")
		}
		limit := l.MemoryBytes
		res.Memory.Max = &limit
		if b.swap {
			var zero int64 // memory.swap.max counts swap alone: none beyond the cap
			res.Memory.Swap = &zero
		}
	}
	if l.Pids > 0 {
		if res.Pids == nil {
			return nil, errors.New("cgroup v2: no pids controller for a pids cap")
		}
		res.Pids.Max = l.Pids
	}
	dir := filepath.Join(b.dir, name)
	// Mkdir is the claim: it fails on a taken name, where the library's
	// MkdirAll would share it.
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup v2: creating group %q: %w", name, err)
	}
	m, err := b.parent.NewChild(name, res)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("cgroup v2: creating group %q with %+v: %w", name, l, err), rmdirMissingOK(dir))
	}
	return &v2Group{m: m, dir: dir}, nil
}

func (b *v2Backend) remove() error {
	return b.parent.Delete()
}

// v2Group is a group in the unified hierarchy.
type v2Group struct {
	m   *cgroup2.Manager
	dir string
}

func (g *v2Group) add(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("invalid pid %d", pid)
	}
	return g.m.AddProc(uint64(pid))
}

func (g *v2Group) stats() (Stats, error) {
	if _, err := os.Stat(g.dir); err != nil {
		return Stats{}, err // the library reads a missing file as 0
	}
	m, err := g.m.StatFiltered(cgroup2.StatMemory | cgroup2.StatMemoryEvents | cgroup2.StatPids)
	if err != nil {
		return Stats{}, err
	}
	s := Stats{
		MemoryBytes:     toInt64(m.GetMemory().GetUsage()),
		MemoryPeakBytes: toInt64(m.GetMemory().GetMaxUsage()),
		MemoryCapHits:   toInt64(m.GetMemoryEvents().GetMax()),
		OOMKills:        toInt64(m.GetMemoryEvents().GetOomKill()),
		Pids:            toInt64(m.GetPids().GetCurrent()),
	}
	hits, err := readEventCount(filepath.Join(g.dir, "pids.events"), "max")
	if err != nil && !errors.Is(err, os.ErrNotExist) { // missing without the pids controller
		return Stats{}, err
	}
	s.PidsCapHits = hits
	return s, nil
}

func (g *v2Group) procsFiles() []string { return []string{filepath.Join(g.dir, "cgroup.procs")} }

func (g *v2Group) killFile() string { return filepath.Join(g.dir, "cgroup.kill") }

func (g *v2Group) remove() error {
	if _, err := os.Stat(g.dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return g.m.Delete()
}

func (g *v2Group) dirs() []string { return []string{g.dir} }

// without returns the elements of want not in have.
func without(want, have []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}
