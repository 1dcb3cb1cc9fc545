//go:build linux

package execsandbox

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/exec"
)

// TestGateBoundsRefusals: a command the proxy refused 20,000 names (each
// twice) gets the first exec.MaxRefused hosts, each once, and the count of
// the refusals past them; the next command sees only what was refused while
// it ran.
func TestGateBoundsRefusals(t *testing.T) {
	tests := []struct {
		name      string
		hosts     int
		wantHosts int
		wantMore  int
	}{
		{"a few", 3, 3, 0},
		{"exactly the cap", exec.MaxRefused, exec.MaxRefused, 0},
		{"20,000 names", 20000, exec.MaxRefused, 2 * (20000 - exec.MaxRefused)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &gate{running: map[*watch]struct{}{}}
			w := g.enter(nil)
			for range 2 {
				for i := range tt.hosts {
					g.refuse(fmt.Sprintf("h%05d.example.com", i), 443, "not in --allow-domain")
				}
			}
			got := g.leave(w)
			late := g.enter(nil)
			g.refuse("late.example.com", 80, "not in --allow-domain")
			assert.Len(t, got.hosts, tt.wantHosts)
			assert.Equal(t, tt.wantMore, got.more)
			assert.Equal(t, exec.RefusedHost{Host: "h00000.example.com", Port: 443, Reason: "not in --allow-domain"}, got.hosts[0])
			seen := map[string]bool{}
			for _, h := range got.hosts {
				assert.False(t, seen[h.Host], "each host once: %s", h.Host)
				seen[h.Host] = true
			}
			assert.Equal(t, refusals{hosts: []exec.RefusedHost{{Host: "late.example.com", Port: 80, Reason: "not in --allow-domain"}}}, g.leave(late))
		})
	}
}

// TestGateClipsRefusedHosts: a host name a command sends is recorded cut
// to maxHostBytes (a 60 KB CONNECT host flooded the result past the
// output's bounds), with its reason.
func TestGateClipsRefusedHosts(t *testing.T) {
	g := &gate{running: map[*watch]struct{}{}}
	w := g.enter(nil)
	long := strings.Repeat("a", 60<<10)
	g.refuse(long, 443, "not in --allow-domain: "+long)
	refused := g.leave(w)
	require.Len(t, refused.hosts, 1)
	assert.Len(t, refused.hosts[0].Host, maxHostBytes+3)
	assert.True(t, strings.HasSuffix(refused.hosts[0].Host, "..."))
	assert.LessOrEqual(t, len(refused.hosts[0].Reason), 2*maxHostBytes+3)
}
