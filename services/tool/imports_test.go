package tool_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVocabularyImportsNoService (issue 21): the vocabulary packages, and
// the seams over them, import no service: services/tool imports neither
// sandboxpolicy nor session, and none of them reaches a package outside
// the vocabulary.
func TestVocabularyImportsNoService(t *testing.T) {
	vocabulary := []string{"services/tool", "services/sandbox", "services/errcode"}
	allowed := map[string]bool{}
	for _, v := range vocabulary {
		allowed["github.com/dsh-go/harness/"+v] = true
	}
	for _, pkg := range append(vocabulary, "services/fs", "services/exec") {
		out, err := exec.Command("go", "list", "-deps", "github.com/dsh-go/harness/"+pkg).Output()
		require.NoError(t, err, "go list %s", pkg)
		for _, dep := range strings.Fields(string(out)) {
			if !strings.HasPrefix(dep, "github.com/dsh-go/harness/") || dep == "github.com/dsh-go/harness/"+pkg {
				continue
			}
			assert.True(t, allowed[dep], "%s imports %s, which is not vocabulary", pkg, dep)
		}
	}
}
