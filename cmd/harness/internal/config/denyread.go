package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-go/harness/services/sandbox"
)

// validateDenyRead checks the --deny-read patterns (each as
// sandbox.NewDenyRead parses it) and the --allow-read names (each a default
// pattern, spelled as the default is); errors are *FieldError naming the
// first bad value and what is wrong with it.
func validateDenyRead(deny, allow []string) error {
	for _, p := range deny {
		if _, err := sandbox.NewDenyRead(sandbox.DenyReadOptions{Patterns: []string{p}}); err != nil {
			// NewDenyRead names the pattern; its cause says what is wrong.
			if cause := errors.Unwrap(err); cause != nil {
				err = cause
			}
			return fieldErr("deny-read", "%q: %v", p, err)
		}
	}
	defaults := droppableDefaults()
	for _, a := range allow {
		if slices.Contains(defaults, a) {
			continue
		}
		msg := fmt.Sprintf("%q names no default deny-read pattern", a)
		if s := Suggest(a, defaults); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return fieldErr("allow-read", "%s; the defaults are %s", msg, strings.Join(defaults, ", "))
	}
	return nil
}

// droppableDefaults returns the default deny-read patterns --allow-read
// may name: sandbox.DenyReadDefaults less its exemptions (`!.env.example`),
// which deny nothing.
func droppableDefaults() []string {
	return slices.DeleteFunc(sandbox.DenyReadDefaults(), func(p string) bool { return strings.HasPrefix(p, "!") })
}
