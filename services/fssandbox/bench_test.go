//go:build linux

package fssandbox_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

var kib = strings.Repeat("0123456789abcde\n", 64) // 1 KiB

// BenchmarkFenceOverhead interleaves the same mutation through fssandbox
// (workspace-write) and fslocal on sibling files, in alternating order, and
// reports the median of each and "ratio" = fssandbox / fslocal.
func BenchmarkFenceOverhead(b *testing.B) {
	ctx := context.Background()
	for _, op := range []string{"write", "edit"} {
		b.Run(op, func(b *testing.B) {
			base, err := filepath.EvalSymlinks(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			policy, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: base, TempRoots: []string{}})
			if err != nil {
				b.Fatal(err)
			}
			sb := newBenchSandbox(b, policy, base)
			local, err := fslocal.New(fslocal.Config{Cwd: base}, nil)
			if err != nil {
				b.Fatal(err)
			}
			type side struct {
				svc fs.Service
				tg  fs.Target
				v   fs.Version
				ns  []float64
			}
			sides := []*side{{svc: sb}, {svc: local}}
			for i, s := range sides {
				s.tg, _ = s.svc.Resolve(ctx, "f"+string(rune('a'+i))+".txt", fs.ResolveOptions{})
				out, err := s.svc.WriteText(ctx, s.tg, "marker A\n"+kib, fs.WriteOptions{})
				if err != nil {
					b.Fatal(err)
				}
				s.v = out.Version
			}
			words := [2]string{"marker A", "marker B"}
			b.ResetTimer()
			for i := range b.N {
				for k := range sides {
					s := sides[(i+k)%2]
					start := time.Now()
					if op == "write" {
						if _, err := s.svc.WriteText(ctx, s.tg, kib, fs.WriteOptions{}); err != nil {
							b.Fatal(err)
						}
					} else {
						e, err := s.svc.EditText(ctx, s.tg, fs.EditRequest{OldString: words[i%2], NewString: words[(i+1)%2], Version: s.v})
						if err != nil {
							b.Fatal(err)
						}
						s.v = e.Version
					}
					s.ns = append(s.ns, float64(time.Since(start)))
				}
			}
			ms, ml := median(sides[0].ns), median(sides[1].ns)
			b.ReportMetric(ms, "fssandbox-ns")
			b.ReportMetric(ml, "fslocal-ns")
			b.ReportMetric(ms/ml, "ratio")
		})
	}
}

func newBenchSandbox(b *testing.B, policy *sandboxpolicy.Service, cwd string) fs.Service {
	b.Helper()
	f, err := fssandboxNew(policy, cwd)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Close() })
	return f
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
