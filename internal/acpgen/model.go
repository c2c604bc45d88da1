package main

import (
	"fmt"
	"strings"

	"github.com/acpkit/acprpc/internal/acpschema"
)

// Kinds of declaration.
type kind int

const (
	kindStruct  kind = iota // an object: fields, and maybe a variant (Union.Embedded)
	kindWrapper             // a union of its own: one Value field holding the variant
	kindEnum                // a named string or integer with constants
	kindAlias               // a named string or number without constants
	kindRaw                 // any JSON value, kept as its text
	kindSlice               // a named list (a variant of a list union)
	kindUnknown             // the variant of a tag this package does not know
	kindScalar              // a scalar union's variant: a named scalar, list, null or raw value
)

// decl is one Go type to write.
type decl struct {
	Name       string
	Schema     string // the schema's name, for the registry; "" for a type of the generator's own
	Doc        string
	Unstable   bool
	Kind       kind
	Base       string // kindEnum, kindAlias: the Go type underneath; kindSlice: the element type
	Consts     []constant
	Fields     []*field
	Union      *union      // kindWrapper, or a kindStruct with a variant
	Implements []implement // the unions this type is a variant of
	Disc       string      // kindUnknown: the discriminator's JSON name
	DiscField  string      // kindUnknown: its Go field
	Of         *union      // kindUnknown: the union
	JSONKind   string      // kindScalar: the JSON kind it takes (jsonString, ...)
	Closed     bool        // kindEnum: the schema lists every value it takes
}

type constant struct {
	Name, Value, Doc string
	Unstable         bool
}

// field is one field of a struct.
type field struct {
	Name, JSON, Type, Doc string
	Omit                  string // "", "omitempty" or "omitzero"
	Unstable              bool
	NilFix                string // required list or map: the empty value nil is sent as
	Required, Nullable    bool   // the schema requires the member; null is one of its values
	DefaultOnError        bool   // the schema reads a malformed value as absent
	SkipInvalid           bool   // the schema leaves a list's malformed elements out
	NoNullItems           bool   // a list whose elements may not be null
	Enum                  string // the closed enum the field holds, or a list of
	EnumList              bool
}

// union is a set of variants, each a Go type implementing Iface.
type union struct {
	Name     string // the Go type holding the variant
	Iface    string
	Method   string // the marker method, returning the variant's encoded tag
	Field    string // the Go field holding the variant
	Disc     string // the discriminator's JSON name; "" for an untagged union
	Embedded bool   // the variant's members sit beside the object's own
	List     bool   // untagged union of lists, told apart by their first element
	Scalar   bool   // told apart by the JSON kind of the value (see scalar.go)
	Variants []*variant
	Default  *variant // tagged: the variant for a missing tag
	Unknown  *variant // tagged: the variant for a tag not listed
}

type variant struct {
	Tag      string   // the discriminator's value; a scalar union's: its JSON kind
	Type     string   // Go type
	Keys     []string // untagged: members only this variant requires
	Unstable bool
}

type implement struct {
	U   *union
	Tag string // encoded member, `"type":"text"`, or ""
}

// model is everything one package declares.
type model struct {
	version  int
	defs     *acpschema.Members // from schema.unstable.json: every definition
	stable   *acpschema.Members // from schema.json
	decls    []*decl
	byName   map[string]*decl // Go name -> declaration
	bySchema map[string]*decl // schema name -> declaration
	methods  []*method
}

// unstableNote marks what only the unstable schema has.
const unstableNote = "Unstable: only in the schema's unstable variant (schema.unstable.json); it may change or go away."

func newModel(version int, stable, unstable *acpschema.File) *model {
	return &model{
		version: version, defs: unstable.Defs, stable: stable.Defs,
		byName: map[string]*decl{}, bySchema: map[string]*decl{},
	}
}

// build declares every definition, in the schema's order.
func (m *model) build() error {
	for _, name := range m.defs.Names {
		s := m.defs.Get(name)
		if s.XDocsIgnore {
			continue
		}
		d := &decl{Name: goName(name), Schema: name, Kind: m.classify(s)}
		switch d.Kind {
		case kindAlias:
			d.Base = scalarType(s)
		case kindEnum:
			d.Base = "string"
			if t, _ := s.Union()[0].MainType(); t == "integer" {
				d.Base = "int32"
			}
		}
		m.bySchema[name] = d
	}
	for _, name := range m.defs.Names {
		d := m.bySchema[name]
		if d == nil {
			continue
		}
		if err := m.add(d); err != nil {
			return err
		}
		if err := m.fill(d, m.defs.Get(name), m.stable.Get(name)); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	m.markChecks()
	m.collectMethods()
	return nil
}

// add registers a declaration under its Go name, which must be unique.
func (m *model) add(d *decl) error {
	if prev := m.byName[d.Name]; prev != nil {
		return fmt.Errorf("two declarations named %s (%s, %s)", d.Name, prev.Schema, d.Schema)
	}
	m.byName[d.Name] = d
	m.decls = append(m.decls, d)
	return nil
}

// classify decides a definition's kind from its shape.
func (m *model) classify(s *acpschema.Schema) kind {
	t, _ := s.MainType()
	variants := s.Union()
	switch {
	case t == "object" && len(variants) > 0:
		return kindStruct
	case t == "object":
		return kindStruct
	case len(variants) == 0 && (t == "string" || t == "integer" || t == "number" || t == "boolean"):
		return kindAlias
	case len(variants) == 0:
		return kindRaw
	case isEnum(variants):
		return kindEnum
	case m.discriminator(s) != "" || objectVariants(m, variants) || isScalarUnion(variants):
		return kindWrapper
	}
	return kindRaw
}

// isEnum reports whether every variant is a string or an integer: a const,
// or the catch-all of other values.
func isEnum(variants []*acpschema.Schema) bool {
	kinds := map[string]bool{}
	for _, v := range variants {
		t, _ := v.MainType()
		if (t != "string" && t != "integer") || v.Properties != nil || v.Items != nil {
			return false
		}
		kinds[t] = true
	}
	return len(kinds) == 1
}

// objectVariants reports whether an untagged union's variants are all
// objects, or all lists of objects, that this package can tell apart.
func objectVariants(m *model, variants []*acpschema.Schema) bool {
	for _, v := range variants {
		switch {
		case v.RefName() != "" && m.defs.Get(v.RefName()) != nil:
			if t, _ := m.defs.Get(v.RefName()).MainType(); t != "object" {
				return false
			}
		case v.Items != nil && v.Items.RefName() != "":
		case v.Properties != nil:
		default:
			return false
		}
	}
	return true
}

// discriminator is the member a union's variants are tagged by, or "".
func (m *model) discriminator(s *acpschema.Schema) string {
	if s.Discriminator != nil {
		return s.Discriminator.PropertyName
	}
	for _, v := range s.Union() {
		if v.Properties == nil {
			continue
		}
		for _, p := range v.Properties.Names {
			if _, ok := v.Properties.Get(p).ConstString(); ok {
				return p
			}
		}
	}
	return ""
}

// fill completes a declaration from its definition; stable is the same
// definition in schema.json, nil when it is unstable only.
func (m *model) fill(d *decl, s, stable *acpschema.Schema) error {
	d.Unstable = stable == nil
	d.Doc = s.Description
	if stable != nil {
		d.Doc = stable.Description
	}
	switch d.Kind {
	case kindEnum:
		m.fillEnum(d, s, stable)
	case kindStruct:
		return m.fillStruct(d, s, stable)
	case kindWrapper:
		u := &union{Name: d.Name, Iface: d.Name + "Variant", Method: lowerFirst(d.Name) + "Tag", Field: "Value"}
		d.Union = u
		if isScalarUnion(s.Union()) {
			return m.fillScalarUnion(u, s, stable, d.Schema)
		}
		return m.fillUnion(u, s, stable, d.Schema)
	}
	return nil
}

// scalarType is the Go type of a string, number or boolean node.
func scalarType(s *acpschema.Schema) string {
	t, _ := s.MainType()
	switch t {
	case "string":
		return "string"
	case "boolean":
		return "bool"
	case "number":
		if s.Format == "float" {
			return "float32"
		}
		return "float64"
	case "integer":
		switch s.Format {
		case "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64":
			return s.Format
		case "uint":
			return "uint64"
		}
		return "int64"
	}
	return "any"
}

// fillEnum lists an enum's constants, named after the type and the value
// (or, for integers, the variant's title).
func (m *model) fillEnum(d *decl, s, stable *acpschema.Schema) {
	var others []string
	for _, v := range s.Union() {
		if v.Const == nil {
			others = append(others, v.Description)
			continue
		}
		c := constant{Doc: v.Description, Unstable: stable != nil && !hasConst(stable, v.Const)}
		if sv := constVariant(stable, v.Const); sv != nil {
			c.Doc = sv.Description
		}
		if s, ok := v.ConstString(); ok {
			c.Name, c.Value = d.Name+goName(s), fmt.Sprintf("%q", s)
		} else {
			c.Name, c.Value = d.Name+goName(v.Title), fmt.Sprint(v.Const)
		}
		d.Consts = append(d.Consts, c)
	}
	if len(others) > 0 {
		d.Doc += "\n\nOther values: " + strings.Join(others, " ")
	}
	d.Closed = len(others) == 0
}

func hasConst(s *acpschema.Schema, c any) bool { return constVariant(s, c) != nil }

// constVariant is the variant of the enum s whose const is c, or nil.
func constVariant(s *acpschema.Schema, c any) *acpschema.Schema {
	if s == nil {
		return nil
	}
	for _, v := range s.Union() {
		if v.Const == c {
			return v
		}
	}
	return nil
}

// fillStruct lists an object's fields, and its variant when the object is
// also a union.
func (m *model) fillStruct(d *decl, s, stable *acpschema.Schema) error {
	disc := ""
	if len(s.Union()) > 0 {
		disc = m.discriminator(s)
	}
	flatten := disc != "" && s.Properties.Get(disc) != nil
	for _, p := range propNames(s) {
		if flatten && p == disc {
			f, err := m.flatField(d, stableOr(stable, s), disc)
			if err != nil {
				return err
			}
			d.Fields = append(d.Fields, f)
			continue
		}
		f, err := m.field(s, stable, p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		d.Fields = append(d.Fields, f)
	}
	if len(s.Union()) == 0 {
		return nil
	}
	if flatten {
		return m.flattenVariants(d, s)
	}
	name := goName(disc)
	if disc == "" {
		name = "Variant"
	}
	if f, ok := unionFields[d.Schema]; ok {
		name = f
	}
	u := &union{Name: d.Name, Iface: d.Name + "Variant", Method: lowerFirst(d.Name) + "Tag", Field: name, Embedded: true}
	d.Union = u
	return m.fillUnion(u, s, stable, d.Schema)
}

// stableOr is stable when the definition is in the stable schema, else s:
// where the descriptions come from.
func stableOr(stable, s *acpschema.Schema) *acpschema.Schema {
	if stable != nil {
		return stable
	}
	return s
}

func propNames(s *acpschema.Schema) []string {
	if s.Properties == nil {
		return nil
	}
	return s.Properties.Names
}

// flatField is the discriminator of a union whose tag the object declares
// itself (IdleStateUpdate's stopReason): a plain enum field, the variants'
// own fields added beside it by flattenVariants.
func (m *model) flatField(d *decl, s *acpschema.Schema, disc string) (*field, error) {
	enumName := goName(disc)
	if _, taken := m.bySchema[disc]; taken || m.defs.Get(goName(disc)) != nil {
		enumName = d.Name + goName(disc)
	}
	e := &decl{Name: enumName, Kind: kindEnum, Base: "string", Unstable: d.Unstable,
		Doc: fmt.Sprintf("%s is the %s of a %s.\n\n%s", enumName, disc, d.Name, s.Properties.Get(disc).Description)}
	for _, v := range s.Union() {
		if v.Properties == nil || v.Properties.Get(disc) == nil {
			continue
		}
		if c, ok := v.Properties.Get(disc).ConstString(); ok {
			e.Consts = append(e.Consts, constant{Name: enumName + goName(c), Value: fmt.Sprintf("%q", c), Doc: v.Description})
		}
	}
	if err := m.add(e); err != nil {
		return nil, err
	}
	return &field{Name: goName(disc), JSON: disc, Type: enumName, Omit: "omitempty", Doc: s.Properties.Get(disc).Description}, nil
}

// flattenVariants adds the fields of the flattened variants that bring
// their own, optional as each applies to one tag only.
func (m *model) flattenVariants(d *decl, s *acpschema.Schema) error {
	for _, v := range s.Union() {
		ref := v.RefName()
		if ref == "" {
			continue
		}
		def := m.defs.Get(ref)
		for _, p := range propNames(def) {
			f, err := m.field(def, nil, p)
			if err != nil {
				return err
			}
			f.Unstable = false
			f.Doc = fmt.Sprintf("%s\n\nSet only when %s is %q.", f.Doc, goName(m.discriminator(s)), tagOf(v, m.discriminator(s)))
			if !strings.HasPrefix(f.Type, "*") && f.Omit == "" {
				f.Omit = "omitempty"
			}
			d.Fields = append(d.Fields, f)
		}
	}
	return nil
}

func tagOf(v *acpschema.Schema, disc string) string {
	if v.Properties == nil || v.Properties.Get(disc) == nil {
		return ""
	}
	c, _ := v.Properties.Get(disc).ConstString()
	return c
}
