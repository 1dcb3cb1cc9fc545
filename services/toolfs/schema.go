package toolfs

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// prop is one input property.
type prop struct {
	name     string
	schema   *jsonschema.Schema
	required bool
}

func str(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc}
}

// positive is a whole-number argument of at least 1 (offset, limit):
// declared "integer", so a client that validates refuses 1.5 itself, and
// the tool refuses it with INVALID_ARGUMENT when it does not (T-21).
func positive(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Minimum: jsonschema.Ptr(1.0), Description: desc}
}

// atMost returns s with the maximum the server enforces declared (issue 21).
func atMost(s *jsonschema.Schema, maxValue int) *jsonschema.Schema {
	s.Maximum = jsonschema.Ptr(float64(maxValue))
	return s
}

func boolean(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "boolean", Description: desc}
}

// object builds an input schema: type object, properties in order, required;
// no additionalProperties (spec section 1: an extra argument still reaches
// the tool).
func object(props ...prop) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	for _, p := range props {
		s.Properties[p.name] = p.schema
		s.PropertyOrder = append(s.PropertyOrder, p.name)
		if p.required {
			s.Required = append(s.Required, p.name)
		}
	}
	return s
}

// outputSchema infers the schema of a tool's structured result.
func outputSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		// The result types are fixed at compile time: a failure here is
		// a programming mistake, found by every test run.
		panic(fmt.Sprintf("toolfs: output schema: %v", err))
	}
	tighten(s)
	return s
}

// tighten narrows the nullable types that schema inference gives Go slices
// and pointers to the single type the tools actually send: lists are always
// arrays (empty, never null) and an omitted size is absent, not null. Only
// write's "before" stays nullable (null on create).
func tighten(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" && (s.Types[1] == "array" || s.Types[1] == "integer") {
		s.Type, s.Types = s.Types[1], nil
	}
	for _, p := range s.Properties {
		tighten(p)
	}
	tighten(s.Items)
}
