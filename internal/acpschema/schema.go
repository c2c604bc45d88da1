// Package acpschema reads ACP's JSON Schema files as the schema package of
// @agentclientprotocol/sdk ships them, keeping the order of their members:
// the model the type generator (internal/acpgen) and the round-trip tests
// of the generated packages share.
package acpschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Schema is one JSON Schema node of ACP's schema files, with the members
// the generator reads. Properties and $defs keep their order in the file,
// so the generated code follows the schema's order.
type Schema struct {
	Title                string          `json:"title"`
	Description          string          `json:"description"`
	Type                 any             `json:"type"` // a string, or a list such as ["string","null"]
	Const                any             `json:"const"`
	Ref                  string          `json:"$ref"`
	Properties           *Members        `json:"properties"`
	Required             []string        `json:"required"`
	AllOf                []*Schema       `json:"allOf"`
	AnyOf                []*Schema       `json:"anyOf"`
	OneOf                []*Schema       `json:"oneOf"`
	Items                *Schema         `json:"items"`
	AdditionalProperties json.RawMessage `json:"additionalProperties"`
	Not                  *Schema         `json:"not"`
	Format               string          `json:"format"`
	ContentEncoding      string          `json:"contentEncoding"`
	Minimum              *float64        `json:"minimum"`
	Maximum              *float64        `json:"maximum"`
	MinLength            *int            `json:"minLength"`
	MinItems             *int            `json:"minItems"`
	Default              json.RawMessage `json:"default"`
	Discriminator        *struct {
		PropertyName string `json:"propertyName"`
	} `json:"discriminator"`
	XMethod     string `json:"x-method"`
	XSide       string `json:"x-side"`
	XDocsIgnore bool   `json:"x-docs-ignore"`
	// XDefaultOnError says that a malformed value reads as absent.
	XDefaultOnError bool `json:"x-deserialize-default-on-error"`
	// XSkipInvalidItems says that a list's elements that are malformed
	// are left out.
	XSkipInvalidItems bool `json:"x-deserialize-skip-invalid-items"`
}

// Members is a JSON object of schemas in the order the file gives them.
type Members struct {
	Names []string
	ByKey map[string]*Schema
}

// UnmarshalJSON keeps the members' order.
func (m *Members) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return err
	}
	m.ByKey = map[string]*Schema{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name := tok.(string)
		var s Schema
		if err := dec.Decode(&s); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		m.Names = append(m.Names, name)
		m.ByKey[name] = &s
	}
	_, err := dec.Token()
	return err
}

// Get returns the member name, or nil.
func (m *Members) Get(name string) *Schema {
	if m == nil {
		return nil
	}
	return m.ByKey[name]
}

// Len is the number of members.
func (m *Members) Len() int {
	if m == nil {
		return 0
	}
	return len(m.Names)
}

// File is one schema file.
type File struct {
	Defs *Members `json:"$defs"`
}

// Load reads one schema file.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}

// Types returns the node's JSON types ("null" included) in order.
func (s *Schema) Types() []string {
	switch t := s.Type.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

// MainType returns the node's one non-null type and whether null is
// allowed beside it.
func (s *Schema) MainType() (string, bool) {
	main, null := "", false
	for _, t := range s.Types() {
		if t == "null" {
			null = true
		} else {
			main = t
		}
	}
	return main, null
}

// IsNull reports whether the node is {"type":"null"}.
func (s *Schema) IsNull() bool {
	t := s.Types()
	return len(t) == 1 && t[0] == "null" && s.Properties == nil
}

// RefName is the definition the node stands for: a $ref, or an allOf of
// one $ref.
func (s *Schema) RefName() string {
	if s.Ref != "" {
		return strings.TrimPrefix(s.Ref, "#/$defs/")
	}
	if len(s.AllOf) == 1 && s.AllOf[0].Ref != "" {
		return strings.TrimPrefix(s.AllOf[0].Ref, "#/$defs/")
	}
	return ""
}

// Union returns the node's oneOf or anyOf.
func (s *Schema) Union() []*Schema {
	if len(s.OneOf) > 0 {
		return s.OneOf
	}
	return s.AnyOf
}

// Nullable splits anyOf [X, null] into X.
func (s *Schema) Nullable() (*Schema, bool) {
	if len(s.AnyOf) == 2 && s.AnyOf[1].IsNull() {
		return s.AnyOf[0], true
	}
	return s, false
}

// IsRequired reports whether name is required.
func (s *Schema) IsRequired(name string) bool {
	for _, r := range s.Required {
		if r == name {
			return true
		}
	}
	return false
}

// ConstString returns the node's string const.
func (s *Schema) ConstString() (string, bool) {
	c, ok := s.Const.(string)
	return c, ok
}

// HasDefault reports whether the node has a default value.
func (s *Schema) HasDefault() bool { return len(s.Default) > 0 }
