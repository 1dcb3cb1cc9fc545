package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMakefileSaysLongSteps: in the targets a newcomer runs first (build,
// demo, lint, test, e2e), each long step (a compile, the linter, vet, the
// test suite) is preceded by an echo that says what is happening, so make
// is never silent for a minute without a word.
func TestMakefileSaysLongSteps(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "Makefile"))
	require.NoError(t, err)
	long := regexp.MustCompile(`^\t(\$\(GO\) (build|vet|test)|\$\(LINT\) run)`)
	rule := regexp.MustCompile(`^([a-z0-9-]+):`)
	recipes := map[string][]string{}
	target := ""
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSuffix(line, "\n")
		if m := rule.FindStringSubmatch(line); m != nil {
			target = m[1]
			continue
		}
		if strings.HasPrefix(line, "\t") && target != "" {
			recipes[target] = append(recipes[target], line)
		} else if line == "" {
			target = ""
		}
	}
	for _, name := range []string{"build", "demo", "lint", "test", "e2e"} {
		steps := recipes[name]
		require.NotEmpty(t, steps, "the Makefile has a %s target", name)
		for i, step := range steps {
			if !long.MatchString(step) {
				continue
			}
			saidBefore := false
			for j := i - 1; j >= 0 && !saidBefore; j-- {
				if long.MatchString(steps[j]) {
					break
				}
				saidBefore = strings.HasPrefix(steps[j], "\t@echo ") && strings.HasSuffix(steps[j], ">&2")
			}
			assert.True(t, saidBefore, "make %s: %q has an echo on stderr before it", name, step)
		}
	}
}
