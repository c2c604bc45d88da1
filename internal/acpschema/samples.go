package acpschema

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Samples returns JSON values of the definition name that the schema
// allows: one with every property set, one with the required ones alone,
// and, for a union, one of each variant (the catch-all of unknown tags as
// "_custom"). The round-trip tests decode them into the generated types.
func (f *File) Samples(name string) ([]json.RawMessage, error) {
	def := f.Defs.Get(name)
	if def == nil {
		return nil, fmt.Errorf("no definition %s", name)
	}
	var out []json.RawMessage
	add := func(g *sampler) error {
		v := g.value(def, 0)
		if g.err != nil {
			return g.err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		for _, prev := range out {
			if string(prev) == string(b) {
				return nil
			}
		}
		out = append(out, b)
		return nil
	}
	for _, full := range []bool{true, false} {
		if err := add(&sampler{f: f, full: full, variant: -1}); err != nil {
			return nil, err
		}
	}
	for i := range def.Union() {
		if err := add(&sampler{f: f, full: true, variant: i}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sampler builds one sample value.
type sampler struct {
	f       *File
	full    bool // every property, or the required ones alone
	variant int  // the variant of the top-level union, or -1 for the first
	err     error
}

const maxDepth = 60

// value builds a value of the node s.
func (g *sampler) value(s *Schema, depth int) any {
	if depth > maxDepth {
		g.err = fmt.Errorf("the schema nests deeper than %d", maxDepth)
		return nil
	}
	if s.Const != nil {
		return s.Const
	}
	if s.IsNull() {
		return nil
	}
	if ref := s.RefName(); ref != "" && s.Properties == nil {
		return g.value(g.f.Defs.Get(ref), depth+1)
	}
	if inner, ok := s.Nullable(); ok {
		return g.value(inner, depth+1)
	}
	if variants := s.Union(); len(variants) > 0 {
		return g.union(s, variants, depth)
	}
	t, _ := s.MainType()
	switch t {
	case "object", "":
		if s.Properties == nil && s.RefName() == "" && t == "" {
			return map[string]any{"any": "value"}
		}
		return g.object(s, depth)
	case "string":
		return stringSample(s)
	case "integer":
		if s.Minimum != nil && *s.Minimum > 1 {
			return int64(*s.Minimum)
		}
		return 1
	case "number":
		return 0.5
	case "boolean":
		return true
	case "array":
		if s.Items == nil {
			return []any{"item"}
		}
		return []any{g.value(s.Items, depth+1)}
	}
	g.err = fmt.Errorf("no sample for type %q", t)
	return nil
}

func stringSample(s *Schema) string {
	switch {
	case s.Format == "uri":
		return "https://example.com/a"
	case s.Format == "date-time":
		return "2026-01-02T03:04:05Z"
	case s.Format == "date":
		return "2026-01-02"
	case s.Format == "email":
		return "someone@example.com"
	case s.ContentEncoding == "base64":
		return "aGVsbG8="
	}
	return "text"
}

// union picks one variant: the one asked for at the top level, else the
// first that is not a catch-all.
func (g *sampler) union(s *Schema, variants []*Schema, depth int) any {
	pick := -1
	if depth == 0 && g.variant >= 0 {
		pick = g.variant
	}
	if pick < 0 {
		for i, v := range variants {
			if v.Title != "other" && v.Title != "none" && !v.IsNull() {
				pick = i
				break
			}
		}
	}
	v := variants[pick]
	var body any
	if v.Title == "other" {
		body = g.other(v, depth)
	} else {
		body = g.value(v, depth+1)
	}
	if s.Properties == nil {
		return body
	}
	own := g.object(s, depth)
	if m, ok := body.(map[string]any); ok {
		for k, x := range m {
			own[k] = x
		}
	}
	return own
}

// other is the catch-all variant of a union, with a tag no variant has.
func (g *sampler) other(v *Schema, depth int) any {
	obj := map[string]any{}
	if v.Properties != nil {
		for _, p := range v.Properties.Names {
			if !v.IsRequired(p) {
				continue
			}
			if t, _ := v.Properties.Get(p).MainType(); t == "string" && v.Properties.Get(p).RefName() == "" {
				obj[p] = "_custom"
			} else {
				obj[p] = g.value(v.Properties.Get(p), depth+1)
			}
		}
	}
	if t, _ := v.MainType(); t == "string" {
		return "_custom"
	}
	if len(v.Union()) > 0 {
		if m, ok := g.value(v.Union()[0], depth+1).(map[string]any); ok {
			for k, x := range m {
				obj[k] = x
			}
		}
	}
	return obj
}

// object builds an object: its properties and those of the definitions it
// is allOf (union takes care of its variant when it is a union too).
func (g *sampler) object(s *Schema, depth int) map[string]any {
	obj := map[string]any{}
	for _, a := range s.AllOf {
		if m, ok := g.value(a, depth+1).(map[string]any); ok {
			for k, x := range m {
				obj[k] = x
			}
		}
	}
	if s.Properties == nil {
		if len(s.AllOf) == 0 {
			g.additional(s, obj, depth)
		}
		return obj
	}
	for _, p := range s.Properties.Names {
		prop := s.Properties.Get(p)
		if !g.full && !s.IsRequired(p) && prop.Const == nil {
			continue
		}
		obj[p] = g.value(prop, depth+1)
	}
	return obj
}

// additional fills an open object (a map) with one member.
func (g *sampler) additional(s *Schema, obj map[string]any, depth int) {
	raw := strings.TrimSpace(string(s.AdditionalProperties))
	switch raw {
	case "", "false":
		return
	case "true", "{}":
		obj["key"] = "value"
		return
	}
	var elem Schema
	if err := json.Unmarshal([]byte(raw), &elem); err != nil {
		g.err = err
		return
	}
	obj["key"] = g.value(&elem, depth+1)
}
