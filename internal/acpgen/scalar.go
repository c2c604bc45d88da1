package main

import (
	"fmt"
	"strings"

	"github.com/acpkit/acprpc/internal/acpschema"
)

// A scalar union (RequestId, ElicitationContentValue) is a union whose
// variants are told apart by the JSON type of the value: a string, an
// integer, a number, a boolean, null, a list of scalars, or any other
// value kept as received. Each variant is a named Go type of its own
// (RequestIDNumber is an int64), a case of the union's type switch.

// JSON kinds of a scalar union's variants, as acpjson.KindOf names them.
const (
	jsonNull    = "Null"
	jsonBoolean = "Boolean"
	jsonString  = "String"
	jsonInteger = "Integer"
	jsonNumber  = "Number"
	jsonArray   = "Array"
	jsonAny     = "" // the catch-all: any other value
)

// scalarKind is the JSON kind a scalar union's variant takes, and whether
// v can be one.
func scalarKind(v *acpschema.Schema) (string, bool) {
	if v.Const != nil || v.Properties != nil || v.Ref != "" || len(v.AllOf) > 0 || len(v.Union()) > 0 {
		return "", false
	}
	if v.IsNull() {
		return jsonNull, true
	}
	t, _ := v.MainType()
	switch t {
	case "boolean":
		return jsonBoolean, true
	case "string":
		return jsonString, true
	case "integer":
		return jsonInteger, true
	case "number":
		return jsonNumber, true
	case "array":
		if v.Items == nil {
			return "", false
		}
		_, ok := scalarKind(v.Items)
		return jsonArray, ok && v.Items.Items == nil
	case "":
		return jsonAny, v.Items == nil
	}
	return "", false
}

// isScalarUnion reports whether every variant is a scalar union's, each
// JSON kind at most once.
func isScalarUnion(variants []*acpschema.Schema) bool {
	seen := map[string]bool{}
	for _, v := range variants {
		k, ok := scalarKind(v)
		if !ok || seen[k] {
			return false
		}
		seen[k] = true
	}
	return len(variants) > 1
}

// fillScalarUnion declares a scalar union's variants, each named after the
// union and its title.
func (m *model) fillScalarUnion(u *union, s, stable *acpschema.Schema, owner string) error {
	u.Scalar = true
	for _, v := range s.Union() {
		kind, _ := scalarKind(v)
		sv := stableScalar(stable, kind)
		d := &decl{
			Name: u.Name + goName(v.Title), Kind: kindScalar, JSONKind: kind,
			Doc:      stableOr(sv, v).Description,
			Unstable: m.bySchema[owner].Unstable || (stable != nil && sv == nil),
		}
		switch kind {
		case jsonNull, jsonAny:
		case jsonArray:
			d.Base = "[]" + scalarType(v.Items)
		default:
			d.Base = scalarType(v)
		}
		if kind == jsonInteger && d.Base != "int64" {
			return fmt.Errorf("integer variant %s of format %q: only int64 is read", d.Name, v.Format)
		}
		if d.Doc == "" {
			d.Doc = fmt.Sprintf("%s is the %s %s.", d.Name, u.Name, v.Title)
		}
		d.Implements = []implement{{U: u}}
		vr := &variant{Tag: kind, Type: d.Name, Unstable: d.Unstable}
		u.Variants = append(u.Variants, vr)
		if kind == jsonAny {
			u.Unknown = vr
		}
		if err := m.add(d); err != nil {
			return err
		}
	}
	return nil
}

// stableScalar is the stable union's variant of JSON kind k, or nil.
func stableScalar(stable *acpschema.Schema, k string) *acpschema.Schema {
	if stable == nil {
		return nil
	}
	for _, v := range stable.Union() {
		if kind, _ := scalarKind(v); kind == k {
			return v
		}
	}
	return nil
}

// takesNull reports whether a union reads null as one of its values, or
// refuses it, rather than as an omitted member: a scalar union does, as
// null is a JSON kind like the others (RequestId's in v1; no variant of
// v1's ElicitationContentValue).
func takesNull(u *union) bool { return u.Scalar }

// scalarVariant writes a scalar union's variant type, with the
// MarshalJSON of those Go would not write as the schema says.
func (w *writer) scalarVariant(d *decl) {
	switch d.JSONKind {
	case jsonNull:
		w.p("type %s struct{}\n", d.Name)
		w.p("// MarshalJSON writes null.")
		w.p("func (%s) MarshalJSON() ([]byte, error) { return []byte(\"null\"), nil }\n", d.Name)
	case jsonAny:
		w.p("type %s json.RawMessage\n", d.Name)
		w.p("// MarshalJSON writes the value as received; an empty one is null.")
		w.p("func (v %s) MarshalJSON() ([]byte, error) {", d.Name)
		w.p("if len(v) == 0 { return []byte(\"null\"), nil }")
		w.p("return v, nil\n}\n")
	case jsonArray:
		w.p("type %s %s\n", d.Name, d.Base)
		w.p("// MarshalJSON writes the list, nil as [].")
		w.p("func (v %s) MarshalJSON() ([]byte, error) {", d.Name)
		w.p("if v == nil { return []byte(\"[]\"), nil }")
		w.p("return json.Marshal(%s(v))\n}\n", d.Base)
	default:
		w.p("type %s %s\n", d.Name, d.Base)
	}
}

// scalarDecoder picks a scalar union's variant by the JSON kind of the
// value. With a catch-all variant, a value its kind's variant refuses (a
// list that is not of strings) is the catch-all's, as the schema's anyOf
// reads it.
func (w *writer) scalarDecoder(u *union) {
	byKind := map[string]*variant{}
	for _, v := range u.Variants {
		byKind[v.Tag] = v
	}
	other := byKind[jsonAny]
	pick := func(expr string) string {
		if other != nil {
			return fmt.Sprintf("if v, err := %s; err == nil { return v, nil }", expr)
		}
		return "return " + expr
	}
	w.p("switch acpjson.KindOf(data) {")
	for _, v := range u.Variants {
		switch v.Tag {
		case jsonAny:
		case jsonNull:
			w.p("case acpjson.KindNull:\nreturn %s{}, nil", v.Type)
		case jsonInteger:
			w.p("case acpjson.KindInteger:\n%s", pick(fmt.Sprintf("acpjson.AsInteger[%s, %s](data)", v.Type, u.Iface)))
		case jsonNumber:
			kinds := "acpjson.KindNumber"
			if byKind[jsonInteger] == nil {
				kinds = "acpjson.KindInteger, " + kinds
			}
			w.p("case %s:\n%s", kinds, pick(fmt.Sprintf("acpjson.As[%s, %s](data)", v.Type, u.Iface)))
		default:
			w.p("case acpjson.Kind%s:\n%s", v.Tag, pick(fmt.Sprintf("acpjson.As[%s, %s](data)", v.Type, u.Iface)))
		}
	}
	w.p("}")
	if other != nil {
		w.p("return %s(acpjson.Clone(data)), nil", other.Type)
		return
	}
	w.p("return nil, %s", w.errf(fmt.Sprintf("%s matches none of its variants: %%.40s", u.Name), "data"))
}

// jsonKindName is how a doc comment names a JSON kind.
func jsonKindName(k string) string {
	switch k {
	case jsonArray:
		return "a list"
	case jsonInteger:
		return "an integer"
	case jsonNull:
		return "null"
	}
	return "a " + strings.ToLower(k)
}
