package guard

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agnivade/levenshtein"
)

// The escalation arguments every escalating tool takes (X-07..X-10).
const (
	argPermissions   = "sandbox_permissions"
	argJustification = "justification"
	// argHosts asks for network hosts instead of a mode (commands under
	// the domain proxy only).
	argHosts = "allow_hosts"
)

// ArgError is an argument the guard or a tool body refused before doing
// anything; its text is the model-facing message, its code
// errcode.InvalidArgument.
type ArgError struct{ Message string }

func (e *ArgError) Error() string { return e.Message }

// BadArg returns an *ArgError with msg.
func BadArg(msg string) error { return &ArgError{Message: msg} }

// decode returns raw as an object of arguments (issue 21): JSON null or
// nothing is the empty object; anything else but an object is refused; a
// key the schema does not declare (known) is refused, naming it and, when
// one is close, the declared key meant; the escalation arguments of a
// family that cannot escalate are refused saying why. order is the schema's
// property order, used to list the declared keys.
func (g *Guard) decode(raw json.RawMessage, known map[string]bool, order []string, escalates bool) (map[string]json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]json.RawMessage{}, nil
	}
	args, dup, err := object(raw)
	if err != nil {
		return nil, BadArg("tool arguments must be a JSON object")
	}
	if dup != "" {
		return nil, BadArg("argument " + shown(dup) + " is given more than once; nothing was done")
	}
	var unknown []string
	for name := range args {
		if known[name] {
			continue
		}
		if escalates && !g.Confines() && (name == argPermissions || name == argJustification) {
			return nil, BadArg("sandbox_permissions is not available in this composition (" + g.unconfined + ")")
		}
		unknown = append(unknown, name)
	}
	if len(unknown) == 0 {
		return args, nil
	}
	slices.Sort(unknown)
	more := len(unknown) - maxListed
	unknown = unknown[:min(len(unknown), maxListed)]
	declared := slices.Clone(order)
	for name := range known {
		if !slices.Contains(declared, name) {
			declared = append(declared, name)
		}
	}
	parts := make([]string, 0, len(unknown))
	for _, name := range unknown {
		part := "unknown argument " + shown(name)
		if near := nearest(name, declared); near != "" {
			part += " (did you mean " + strconv.Quote(near) + "?)"
		}
		parts = append(parts, part)
	}
	if more > 0 {
		parts = append(parts, strconv.Itoa(more)+" more unknown arguments")
	}
	msg := strings.Join(parts, "; ") + "; nothing was done"
	if len(declared) > 0 {
		msg += "; this tool takes: " + strings.Join(declared, ", ")
	}
	return nil, BadArg(msg)
}

// nearest returns the declared key name most likely meant: one equal to it
// but for case, "_" and "-" (dryRun for dry_run), else the closest within
// an edit distance of 2; "" when none is.
func nearest(name string, declared []string) string {
	fold := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	best, bestDist := "", 3
	for _, d := range declared {
		if fold(d) == fold(name) {
			return d
		}
		if dist := levenshtein.ComputeDistance(name, d); dist < bestDist {
			best, bestDist = d, dist
		}
	}
	return best
}

// maxListed is how many unknown arguments a refusal names; maxShown how many
// bytes of one argument name it quotes.
const (
	maxListed = 10
	maxShown  = 64
)

// shown quotes an argument name for a message, cut past maxShown bytes.
func shown(name string) string {
	if len(name) <= maxShown {
		return strconv.Quote(name)
	}
	cut := name[:maxShown]
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return strconv.Quote(cut) + "… (" + strconv.Itoa(len(name)) + " bytes)"
}

// object decodes raw, which must be one JSON object, in one pass: each key
// to its raw value, and the first key given more than once ("" when none
// is: encoding/json would keep the last, so a reader of the first sees
// another call than the one that runs).
func object(raw json.RawMessage) (map[string]json.RawMessage, string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, "", errors.New("not an object")
	}
	args := map[string]json.RawMessage{}
	dup := ""
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, "", err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, "", err
		}
		if _, seen := args[key]; seen && dup == "" {
			dup = key
		}
		args[key] = v
	}
	if _, err := dec.Token(); err != nil { // }
		return nil, "", err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, "", errors.New("data after the object")
	}
	return args, dup, nil
}
