package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

const defaultMount = "/sys/fs/cgroup"

type cgMode int

const (
	modeNone cgMode = iota
	modeV1
	modeV2
)

// mode is the cgroup version this machine manages memory and pids with:
// v1 on legacy and hybrid mounts (a hybrid's unified hierarchy has no
// controllers a v1 hierarchy holds), v2 on a unified mount.
func mode() cgMode {
	switch cgroups.Mode() {
	case cgroups.Legacy, cgroups.Hybrid:
		return modeV1
	case cgroups.Unified:
		return modeV2
	default:
		return modeNone
	}
}

// v1Backend is the parent group in the memory and pids hierarchies.
type v1Backend struct {
	parent  cgroup1.Cgroup
	memDir  string // the parent's directory in the memory hierarchy
	pidsDir string // the parent's directory in the pids hierarchy
	memsw   bool   // the kernel accounts swap: memory.memsw.* exist
}

// pather is what cgroup1's subsystems with a directory implement.
type pather interface {
	cgroup1.Subsystem
	Path(path string) string
}

func openV1() (backend, error) {
	all, err := cgroup1.Default()
	if err != nil {
		return nil, fmt.Errorf("cgroup v1: listing hierarchies: %w", err)
	}
	var memory pather
	havePids := false
	for _, s := range all {
		switch s.Name() {
		case cgroup1.Memory:
			memory, _ = s.(pather)
		case cgroup1.Pids:
			havePids = true
		}
	}
	if memory == nil || !havePids {
		return nil, fmt.Errorf("cgroup v1: the memory and pids hierarchies are not both mounted under %s", defaultMount)
	}
	// Memory and pids live beside each other: <root>/memory, <root>/pids.
	root := filepath.Dir(memory.Path("/"))
	mem := cgroup1.NewMemory(root, cgroup1.OptionalSwap(), cgroup1.IgnoreModules("kmem", "kmem.tcp"))
	pids := cgroup1.NewPids(root)
	hierarchy := func() ([]cgroup1.Subsystem, error) { return []cgroup1.Subsystem{mem, pids}, nil }
	path := cgroup1.NestedPath(parentName())
	memPath, err := path(cgroup1.Memory)
	if err != nil {
		return nil, fmt.Errorf("cgroup v1: this process's memory cgroup: %w", err)
	}
	pidsPath, err := path(cgroup1.Pids)
	if err != nil {
		return nil, fmt.Errorf("cgroup v1: this process's pids cgroup: %w", err)
	}
	requireAll := func(c *cgroup1.InitConfig) error {
		c.InitCheck = func(s cgroup1.Subsystem, _ cgroup1.Path, err error) error {
			return fmt.Errorf("cgroup v1: controller %s: %w", s.Name(), err)
		}
		return nil
	}
	memDir, pidsDir := mem.Path(memPath), pids.Path(pidsPath)
	removeStale(memDir)
	removeStale(pidsDir)
	parent, err := cgroup1.New(path, &specs.LinuxResources{}, cgroup1.WithHierarchy(hierarchy), requireAll)
	if err != nil {
		// Best effort: a directory made before the failure, if still empty.
		_, _ = rmdirMissingOK(memDir), rmdirMissingOK(pidsDir)
		return nil, fmt.Errorf("cgroup v1: creating %s: %w%s", parentName(), err, permissionHint(err))
	}
	b := &v1Backend{parent: parent, memDir: memDir, pidsDir: pidsDir}
	if _, err := os.Stat(filepath.Join(b.memDir, "memory.memsw.limit_in_bytes")); err == nil {
		b.memsw = true
	}
	return b, nil
}

func (*v1Backend) kind() string { return "cgroup v1" }

func (b *v1Backend) newGroup(name string, l Limits) (groupBackend, error) {
	g := &v1Group{memDir: filepath.Join(b.memDir, name), pidsDir: filepath.Join(b.pidsDir, name)}
	// The memory directory is the claim: Mkdir fails on a taken name, where
	// the library's MkdirAll would share it.
	if err := os.Mkdir(g.memDir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup v1: creating group %q: %w", name, err)
	}
	res := &specs.LinuxResources{}
	if l.MemoryBytes > 0 {
		limit := l.MemoryBytes
		res.Memory = &specs.LinuxMemory{Limit: &limit}
		if b.memsw {
			res.Memory.Swap = &limit // memory+swap: no swap beyond the cap
		}
	}
	if l.Pids > 0 {
		limit := l.Pids
		res.Pids = &specs.LinuxPids{Limit: &limit}
	}
	cg, err := b.parent.New(name, res)
	if err != nil {
		rmErr := errors.Join(rmdirMissingOK(g.memDir), rmdirMissingOK(g.pidsDir))
		return nil, errors.Join(fmt.Errorf("cgroup v1: creating group %q with %+v: %w", name, l, err), rmErr)
	}
	g.cg = cg
	return g, nil
}

func (b *v1Backend) remove() error {
	return b.parent.Delete()
}

// v1Group is a group in the memory and pids hierarchies.
type v1Group struct {
	cg      cgroup1.Cgroup
	memDir  string
	pidsDir string
}

func (g *v1Group) add(pid int) error {
	return g.cg.Add(cgroup1.Process{Pid: pid})
}

func (g *v1Group) stats() (Stats, error) {
	m, err := g.cg.Stat()
	if err != nil {
		return Stats{}, err
	}
	var s Stats
	if mem := m.GetMemory(); mem != nil {
		s.MemoryBytes = toInt64(mem.GetUsage().GetUsage())
		s.MemoryPeakBytes = toInt64(mem.GetUsage().GetMax())
		s.MemoryCapHits = toInt64(max(mem.GetUsage().GetFailcnt(), mem.GetSwap().GetFailcnt()))
	}
	s.OOMKills = toInt64(m.GetMemoryOomControl().GetOomKill())
	s.Pids = toInt64(m.GetPids().GetCurrent())
	hits, err := readEventCount(filepath.Join(g.pidsDir, "pids.events"), "max")
	if err != nil {
		return Stats{}, err
	}
	s.PidsCapHits = hits
	return s, nil
}

func (g *v1Group) procsFiles() []string {
	return []string{filepath.Join(g.memDir, "cgroup.procs"), filepath.Join(g.pidsDir, "cgroup.procs")}
}

func (*v1Group) killFile() string { return "" }

func (g *v1Group) remove() error {
	err := g.cg.Delete()
	if errors.Is(err, cgroup1.ErrCgroupDeleted) {
		return nil
	}
	return err
}

func (g *v1Group) dirs() []string { return []string{g.memDir, g.pidsDir} }
