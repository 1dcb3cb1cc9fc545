//go:build linux

package fssandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// BenchmarkDenyReadOverhead interleaves the same read through fssandbox
// (the deny-read decision on every descriptor, the default set over a
// fixture home) and fslocal (none): a 1 KiB ReadText, and a grep over a
// tree of 2,000 files in 40 directories. It reports the median of each and
// "ratio" = fssandbox / fslocal.
func BenchmarkDenyReadOverhead(b *testing.B) {
	ctx := context.Background()
	base, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	home := filepath.Join(base, "home")
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		b.Fatal(err)
	}
	tree := filepath.Join(base, "tree")
	for d := range 40 {
		dir := filepath.Join(tree, "d"+strconv.Itoa(d), "sub")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 50 {
			if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(f)+".txt"), []byte(kib), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	policy, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: base, TempRoots: []string{}, Homes: []string{home}})
	if err != nil {
		b.Fatal(err)
	}
	sb := newBenchSandbox(b, policy, base)
	local, err := fslocal.New(fslocal.Config{Cwd: base}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ops := map[string]func(svc fs.Service) error{
		"read": func(svc fs.Service) error {
			tg, err := svc.Resolve(ctx, "tree/d0/sub/f0.txt", fs.ResolveOptions{})
			if err == nil {
				_, err = svc.ReadText(ctx, tg)
			}
			return err
		},
		"grep-tree": func(svc fs.Service) error {
			tg, err := svc.Resolve(ctx, "tree", fs.ResolveOptions{})
			if err == nil {
				_, err = svc.Grep(ctx, tg, fs.GrepOptions{Pattern: "nomatch"})
			}
			return err
		},
	}
	for _, name := range []string{"read", "grep-tree"} {
		b.Run(name, func(b *testing.B) {
			var ns [2][]float64
			svcs := [2]fs.Service{sb, local}
			for i := range b.N {
				for k := range 2 {
					j := (i + k) % 2
					start := time.Now()
					if err := ops[name](svcs[j]); err != nil {
						b.Fatal(err)
					}
					ns[j] = append(ns[j], float64(time.Since(start)))
				}
			}
			ms, ml := median(ns[0]), median(ns[1])
			b.ReportMetric(ms, "fssandbox-ns")
			b.ReportMetric(ml, "fslocal-ns")
			b.ReportMetric(ms/ml, "ratio")
		})
	}
}
