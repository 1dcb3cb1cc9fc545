package cli

import (
	"fmt"
	"strings"

	"github.com/dsh-go/harness/services/sandbox"
)

// DenyReadReport is the deny-read part of the policy report (issue 24):
// the paths neither the file tools nor commands read, in every mode.
type DenyReadReport struct {
	// Patterns are the patterns in force, each with where it comes from
	// (sandbox.DenyRead.Describe): the defaults less --allow-read, the
	// --deny-read patterns, then harness's own files.
	Patterns []string `json:"patterns"`
	// Homes are the home directories `~` stands for in the patterns; none
	// means a `~` pattern denies nothing.
	Homes []string `json:"homes"`
}

// denyReadReport returns the report of d, with empty lists (never null).
func denyReadReport(d sandbox.DenyRead) DenyReadReport {
	rep := DenyReadReport{Patterns: d.Describe(), Homes: d.Homes()}
	if rep.Patterns == nil {
		rep.Patterns = []string{}
	}
	if rep.Homes == nil {
		rep.Homes = []string{}
	}
	return rep
}

// writeDenyRead writes the deny-read: part of the policy report: a heading
// saying what `~` stands for, then one pattern a line.
func writeDenyRead(b *strings.Builder, d DenyReadReport) {
	b.WriteString("deny-read (the file tools and commands read none of these, in every mode; ")
	switch len(d.Homes) {
	case 0:
		b.WriteString("~ stands for no home here: the ~ patterns deny nothing)")
	default:
		_, _ = fmt.Fprintf(b, "~ is %s)", strings.Join(d.Homes, " and "))
	}
	if len(d.Patterns) == 0 {
		b.WriteString(": none\n")
		return
	}
	b.WriteString(":\n")
	for _, p := range d.Patterns {
		_, _ = fmt.Fprintf(b, "  %s\n", p)
	}
}
