package toolfs

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/dsh-go/harness/services/guard"
)

// args is a call's arguments, decoded lazily field by field so that each
// field gets the spec's own message when it is missing or ill-typed.
// The guard has refused every key the tool's schema does not declare.
type args map[string]json.RawMessage

// present reports whether name was given (a JSON null counts as absent).
func (a args) present(name string) bool {
	v, ok := a[name]
	return ok && string(v) != "null"
}

// path returns the non-blank string argument name (T-24, T-53, T-65), with
// a leading "~" expanded (see expandHome).
func (a args) path(name string) (string, error) {
	var s string
	if !a.present(name) || json.Unmarshal(a[name], &s) != nil || strings.TrimSpace(s) == "" {
		return "", guard.BadArg(name + " must be a non-empty string")
	}
	return expandHome(name, s)
}

// text returns the string argument name, which may be empty; a missing or
// non-string value is an error.
func (a args) text(name string) (string, error) {
	var s string
	if !a.present(name) || json.Unmarshal(a[name], &s) != nil {
		return "", guard.BadArg(name + " must be a string")
	}
	return s, nil
}

// optText returns the string argument name, "" when absent.
func (a args) optText(name string) (string, error) {
	if !a.present(name) {
		return "", nil
	}
	var s string
	if json.Unmarshal(a[name], &s) != nil {
		return "", guard.BadArg(name + " must be a string")
	}
	return s, nil
}

// optBool returns the boolean argument name, def when absent.
func (a args) optBool(name string, def bool) (bool, error) {
	if !a.present(name) {
		return def, nil
	}
	var b bool
	if json.Unmarshal(a[name], &b) != nil {
		return false, guard.BadArg(name + " must be a boolean")
	}
	return b, nil
}

// optPositive returns the positive integer argument name, def when absent
// (T-20, T-21): a JSON number that is a whole number of at least 1.
func (a args) optPositive(name string, def int) (int, error) {
	if !a.present(name) {
		return def, nil
	}
	var f float64
	if json.Unmarshal(a[name], &f) != nil || f < 1 || f != math.Trunc(f) {
		return 0, guard.BadArg(name + " must be a positive integer")
	}
	// A whole number beyond int's range is still a positive integer: cap
	// it, so the caller's range checks say what is wrong with it.
	return int(min(f, maxSafeInteger)), nil
}

// maxSafeInteger is the largest whole number a JSON number carries exactly
// (2^53); larger ones are capped to it.
const maxSafeInteger = 1 << 53
