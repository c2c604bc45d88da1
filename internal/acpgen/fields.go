package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/acpkit/acprpc/internal/acpschema"
)

// What a Go type is, for the rules that choose between value, pointer,
// omitempty and omitzero.
type shape int

const (
	shapeStruct  shape = iota // a struct: a pointer when optional
	shapeWrapper              // a union's wrapper: zero when it holds nothing, so omitzero
	shapeString               // a string or named string: "" is absent
	shapeBool
	shapeNumber
	shapeList // a slice: nil is absent, [] is sent
	shapeMap
	shapeAny // any JSON: nil is absent
	shapeRaw // json.RawMessage: nil is absent
)

// field builds the field for property p of object s. stable is the object
// in schema.json (nil when the object itself is unstable only).
func (m *model) field(s, stable *acpschema.Schema, p string) (*field, error) {
	prop := s.Properties.Get(p)
	inner, nullable := prop.Nullable()
	if t, null := inner.MainType(); null {
		nullable = true
		_ = t
	}
	typ, sh, err := m.goType(inner)
	if err != nil {
		return nil, err
	}
	f := &field{Name: goName(p), JSON: p, Doc: prop.Description}
	if p == "_meta" {
		f.Name = "Meta"
		if typ == "map[string]any" && prop.XDefaultOnError {
			typ = metaType // a malformed _meta reads as none, as the schema says
		}
	}
	if stable != nil {
		if sp := stable.Properties.Get(p); sp != nil {
			f.Doc = sp.Description
		} else {
			f.Unstable = true
		}
	}
	required := s.IsRequired(p) || (prop.HasDefault() && !nullable && sh == shapeList)
	f.Type, f.Omit = typ, omission(sh, required, nullable)
	f.Required, f.Nullable, f.DefaultOnError = s.IsRequired(p), nullable, prop.XDefaultOnError
	f.SkipInvalid = prop.XSkipInvalidItems && sh == shapeList
	f.NoNullItems = sh == shapeList && inner.Items != nil && !schemaTakesNull(inner.Items)
	switch {
	case required && !nullable && (sh == shapeList || sh == shapeMap):
		f.NilFix = typ + "{}"
	case required && nullable && (sh == shapeStruct || sh == shapeString || sh == shapeBool || sh == shapeNumber):
		f.Type = "*" + typ // null is a value of its own
	case !required && prop.HasDefault() && !nullable && sh == shapeStruct:
		f.Omit = "omitzero" // the schema's defaults are all-false objects: the zero value
	case !required && prop.HasDefault() && !nullable && sh == shapeBool:
		// false is the default: left out when false
	case f.Omit == "omitempty" && (sh == shapeStruct || sh == shapeBool || sh == shapeNumber):
		f.Type = "*" + typ
	}
	return f, nil
}

// schemaTakesNull reports whether the schema s has null among its values.
func schemaTakesNull(s *acpschema.Schema) bool {
	inner, nullable := s.Nullable()
	if _, null := inner.MainType(); null {
		nullable = true
	}
	return nullable || inner.IsNull()
}

// metaType is the generated type of _meta, a map that reads a value other
// than an object as no metadata.
const metaType = "Meta"

// omission decides how an absent value is written.
func omission(sh shape, required, nullable bool) string {
	switch {
	case required:
		return ""
	case sh == shapeList, sh == shapeMap, sh == shapeWrapper, sh == shapeRaw:
		return "omitzero"
	}
	return "omitempty"
}

// goType is the Go type of a node, and its shape.
func (m *model) goType(s *acpschema.Schema) (string, shape, error) {
	if ref := s.RefName(); ref != "" {
		return m.refType(ref)
	}
	if s.Union() != nil && s.Properties == nil {
		return "any", shapeAny, nil // an inline union of anything: passed through as is
	}
	t, _ := s.MainType()
	switch t {
	case "string":
		return "string", shapeString, nil
	case "boolean":
		return "bool", shapeBool, nil
	case "integer", "number":
		return scalarType(s), shapeNumber, nil
	case "array":
		if s.Items == nil {
			return "[]any", shapeList, nil
		}
		elem, _, err := m.goType(s.Items)
		return "[]" + elem, shapeList, err
	case "object":
		return m.mapType(s)
	case "":
		return "any", shapeAny, nil
	}
	return "", 0, fmt.Errorf("no Go type for %q", t)
}

// mapType is an object without properties of its own: a map of its
// additional properties.
func (m *model) mapType(s *acpschema.Schema) (string, shape, error) {
	if s.Properties.Len() > 0 {
		return "", 0, fmt.Errorf("inline object with properties")
	}
	raw := strings.TrimSpace(string(s.AdditionalProperties))
	if raw == "" || raw == "true" || raw == "{}" {
		return "map[string]any", shapeMap, nil
	}
	var elem acpschema.Schema
	if err := json.Unmarshal([]byte(raw), &elem); err != nil {
		return "", 0, err
	}
	t, _, err := m.goType(&elem)
	return "map[string]" + t, shapeMap, err
}

// refType is the Go type of a definition, and its shape.
func (m *model) refType(ref string) (string, shape, error) {
	d := m.bySchema[ref]
	if d == nil {
		return "", 0, fmt.Errorf("unknown definition %s", ref)
	}
	switch d.Kind {
	case kindWrapper:
		return d.Name, shapeWrapper, nil
	case kindStruct:
		return d.Name, shapeStruct, nil
	case kindRaw:
		return d.Name, shapeRaw, nil
	case kindEnum:
		if d.Base != "string" {
			return d.Name, shapeNumber, nil
		}
		return d.Name, shapeString, nil
	case kindAlias:
		def := m.defs.Get(ref)
		if t, _ := def.MainType(); t == "string" {
			return d.Name, shapeString, nil
		} else if t == "boolean" {
			return d.Name, shapeBool, nil
		}
		return d.Name, shapeNumber, nil
	}
	return "", 0, fmt.Errorf("definition %s cannot be a field", ref)
}
