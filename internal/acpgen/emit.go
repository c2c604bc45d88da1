package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// writer builds one Go file.
type writer struct {
	b   strings.Builder
	pkg string
}

func (w *writer) p(format string, args ...any) {
	fmt.Fprintf(&w.b, format, args...)
	w.b.WriteByte('\n')
}

// comment writes text as a doc comment.
func (w *writer) comment(text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	for _, line := range strings.Split(text, "\n") {
		w.b.WriteString(strings.TrimRight("// "+line, " ") + "\n")
	}
}

// errf is a Go expression for an error with the package's prefix.
func (w *writer) errf(format string, args ...string) string {
	if len(args) == 0 {
		return fmt.Sprintf("errors.New(%q)", w.pkg+": "+format)
	}
	return fmt.Sprintf("fmt.Errorf(%q, %s)", w.pkg+": "+format, strings.Join(args, ", "))
}

func withNote(doc string, unstable bool) string {
	if unstable {
		return strings.TrimSpace(doc) + "\n\n" + unstableNote
	}
	return doc
}

// decl writes one declaration and its methods.
func (w *writer) decl(d *decl) {
	w.comment(withNote(d.Doc, d.Unstable))
	switch d.Kind {
	case kindAlias:
		w.p("type %s %s\n", d.Name, d.Base)
	case kindRaw:
		w.p("type %s = json.RawMessage\n", d.Name)
	case kindEnum:
		w.p("type %s %s\n", d.Name, d.Base)
		w.consts(d)
		w.knownMethod(d)
	case kindSlice:
		w.p("type %s []%s\n", d.Name, d.Base)
	case kindStruct:
		w.structType(d)
	case kindWrapper:
		w.wrapper(d)
	case kindUnknown:
		w.unknown(d)
	case kindScalar:
		w.scalarVariant(d)
	}
	w.markers(d)
	if d.Union != nil {
		w.iface(d.Union)
		w.decoder(d.Union)
	}
}

func (w *writer) consts(d *decl) {
	if len(d.Consts) == 0 {
		return
	}
	w.p("const (")
	for _, c := range d.Consts {
		w.comment(withNote(c.Doc, c.Unstable))
		w.p("%s %s = %s", c.Name, d.Name, c.Value)
	}
	w.p(")\n")
}

func (w *writer) structType(d *decl) {
	w.p("type %s struct {", d.Name)
	for _, f := range d.Fields {
		w.comment(withNote(f.Doc, f.Unstable))
		tag := f.JSON
		if f.Omit != "" {
			tag += "," + f.Omit
		}
		w.p("%s %s `json:%q`", f.Name, f.Type, tag)
	}
	if u := d.Union; u != nil {
		w.comment(fmt.Sprintf("%s is the variant: %s. Its members are sent beside the fields above.", u.Field, variantList(u)))
		w.p("%s %s `json:\"-\"`", u.Field, u.Iface)
	}
	w.p("}\n")
	w.structMethods(d)
	w.checkedUnmarshal(d)
}

// nilFixes are the required lists and maps, sent as [] or {} when nil.
func nilFixes(d *decl) []*field {
	var out []*field
	for _, f := range d.Fields {
		if f.NilFix != "" {
			out = append(out, f)
		}
	}
	return out
}

func (w *writer) structMethods(d *decl) {
	fixes, u := nilFixes(d), d.Union
	if len(fixes) == 0 && u == nil {
		return
	}
	w.p("// MarshalJSON writes the %s as the schema has it%s.", d.Name, marshalNote(fixes, u))
	w.p("func (v %s) MarshalJSON() ([]byte, error) {", d.Name)
	w.p("type plain %s", d.Name)
	for _, f := range fixes {
		w.p("if v.%s == nil { v.%s = %s }", f.Name, f.Name, f.NilFix)
	}
	if u == nil {
		w.p("return json.Marshal(plain(v))\n}\n")
		return
	}
	w.p("common, err := json.Marshal(plain(v))")
	w.p("if err != nil { return nil, err }")
	w.p("if v.%s == nil { return nil, %s }", u.Field, w.errf(d.Name+"."+u.Field+" is not set"))
	w.p("variant, err := acpjson.Tagged(v.%s.%s(), v.%s)", u.Field, u.Method, u.Field)
	w.p("if err != nil { return nil, err }")
	w.p("return acpjson.Merge(common, variant)\n}\n")

	l := w.membersVar(d)
	w.p("// UnmarshalJSON reads the %s's own fields and its variant from the same object;", d.Name)
	w.p("// null, which the schema makes the same as an omitted member, changes nothing.")
	w.p("func (v *%s) UnmarshalJSON(data []byte) error {", d.Name)
	w.p("if acpjson.IsNull(data) { return nil }")
	w.p("type plain %s", d.Name)
	w.p("if err := acpjson.Into(data, (*plain)(v), %s); err != nil { return err }", l)
	w.enumChecks(d)
	w.p("variant, err := decode%s(data)", d.Name)
	w.p("if err != nil { return err }")
	w.p("v.%s = variant\nreturn nil\n}\n", u.Field)
}

func marshalNote(fixes []*field, u *union) string {
	var parts []string
	if len(fixes) > 0 {
		var names []string
		for _, f := range fixes {
			names = append(names, f.Name)
		}
		parts = append(parts, fmt.Sprintf("a nil %s sent empty, as the schema requires it", strings.Join(names, " or ")))
	}
	if u != nil {
		parts = append(parts, fmt.Sprintf("the members of %s beside its own", u.Field))
	}
	return ": " + strings.Join(parts, ", and ")
}

func (w *writer) wrapper(d *decl) {
	u := d.Union
	w.p("type %s struct {", d.Name)
	w.comment(fmt.Sprintf("Value is the variant: %s.", variantList(u)))
	w.p("Value %s\n}\n", u.Iface)
	w.p("// MarshalJSON writes the variant%s.", tagNote(u))
	w.p("func (u %s) MarshalJSON() ([]byte, error) {", d.Name)
	w.p("if u.Value == nil { return nil, %s }", w.errf(d.Name+" has no Value"))
	w.p("return acpjson.Tagged(u.Value.%s(), u.Value)\n}\n", u.Method)
	if takesNull(u) {
		w.p("// UnmarshalJSON reads the variant%s, null as any other value.", readNote(u))
	} else {
		w.p("// UnmarshalJSON reads the variant%s; null, which the schema makes the same", readNote(u))
		w.p("// as an omitted member, changes nothing.")
	}
	w.p("func (u *%s) UnmarshalJSON(data []byte) error {", d.Name)
	if !takesNull(u) {
		w.p("if acpjson.IsNull(data) { return nil }")
	}
	w.p("v, err := decode%s(data)", d.Name)
	w.p("if err != nil { return err }")
	w.p("u.Value = v\nreturn nil\n}\n")
}

func tagNote(u *union) string {
	if u.Disc == "" {
		return ""
	}
	return fmt.Sprintf(", its %q first", u.Disc)
}

func readNote(u *union) string {
	if u.Scalar {
		return " that the value's JSON type selects"
	}
	if u.Disc == "" {
		return " that the members present select"
	}
	return fmt.Sprintf(" that %q selects", u.Disc)
}

// variantList names a union's variants for a doc comment.
func variantList(u *union) string {
	var names []string
	for _, v := range u.Variants {
		switch {
		case u.Scalar && v == u.Unknown:
			names = append(names, fmt.Sprintf("%s for any other value", v.Type))
		case u.Scalar:
			names = append(names, fmt.Sprintf("%s (%s)", v.Type, jsonKindName(v.Tag)))
		case v == u.Unknown:
			names = append(names, fmt.Sprintf("%s for any other %s", v.Type, u.Disc))
		case v == u.Default:
			names = append(names, fmt.Sprintf("%s (no %s)", v.Type, u.Disc))
		case u.Disc != "":
			names = append(names, fmt.Sprintf("%s (%s %q)", v.Type, u.Disc, v.Tag))
		default:
			names = append(names, v.Type)
		}
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func (w *writer) iface(u *union) {
	w.p("// %s is one of the variants of %s: %s.", u.Iface, u.Name, variantList(u))
	w.p("type %s interface {", u.Iface)
	w.p("%s() string\n}\n", u.Method)
}

// markers writes the methods that make d a variant of its unions.
func (w *writer) markers(d *decl) {
	for _, im := range d.Implements {
		w.p("func (%s) %s() string { return %s }\n", d.Name, im.U.Method, strconv.Quote(im.Tag))
	}
}

func (w *writer) unknown(d *decl) {
	w.p("type %s struct {", d.Name)
	w.p("// %s is the variant's %q.", d.DiscField, d.Disc)
	w.p("%s string", d.DiscField)
	w.p("// Raw is the whole object as received. When it is set, it is what is sent, as it is; when it is nil, an object with %s alone is sent.", d.DiscField)
	w.p("Raw json.RawMessage\n}\n")
	w.p("// MarshalJSON writes Raw, or an object with %s alone.", d.DiscField)
	w.p("func (v %s) MarshalJSON() ([]byte, error) { return acpjson.Unknown(%q, v.%s, v.Raw) }\n", d.Name, d.Disc, d.DiscField)
	w.p("// UnmarshalJSON keeps the object whole in Raw.")
	w.p("func (v *%s) UnmarshalJSON(data []byte) error {", d.Name)
	w.p("tag, _, err := acpjson.Tag(data, %q)", d.Disc)
	w.p("if err != nil { return err }")
	w.p("v.%s, v.Raw = tag, acpjson.Clone(data)\nreturn nil\n}\n", d.DiscField)
}

// decoder writes decodeX, which picks and decodes the variant of union X.
func (w *writer) decoder(u *union) {
	w.p("func decode%s(data []byte) (%s, error) {", u.Name, u.Iface)
	switch {
	case u.Scalar:
		w.scalarDecoder(u)
	case u.Disc != "":
		w.taggedDecoder(u)
	case u.List:
		w.listDecoder(u)
	default:
		w.untaggedDecoder(u, "data")
	}
	w.p("}\n")
}

func as(v *variant, u *union) string {
	return fmt.Sprintf("return acpjson.As[%s, %s](data)", v.Type, u.Iface)
}

func (w *writer) taggedDecoder(u *union) {
	w.p("tag, ok, err := acpjson.Tag(data, %q)", u.Disc)
	w.p("if err != nil { return nil, err }")
	w.p("if !ok {")
	if u.Default != nil {
		w.p("%s", as(u.Default, u))
	} else {
		w.p("return nil, %s", w.errf(fmt.Sprintf("%s without %q", u.Name, u.Disc)))
	}
	w.p("}\nswitch tag {")
	for _, v := range u.Variants {
		if v != u.Unknown && v != u.Default {
			w.p("case %q:\n%s", v.Tag, as(v, u))
		}
	}
	w.p("}")
	switch {
	case u.Unknown != nil:
		w.p("%s", as(u.Unknown, u))
	case u.Default != nil:
		w.p("%s", as(u.Default, u))
	default:
		w.p("return nil, %s", w.errf(fmt.Sprintf("unknown %s %s %%q", u.Name, u.Disc), "tag"))
	}
}

func (w *writer) untaggedDecoder(u *union, on string) {
	w.p("switch {")
	var fallback *variant
	for _, v := range u.Variants {
		if len(v.Keys) == 0 {
			fallback = v
			continue
		}
		w.p("case acpjson.Has(%s, %s):\n%s", on, quoteAll(v.Keys), as(v, u))
	}
	w.p("}")
	if fallback != nil {
		w.p("%s", as(fallback, u))
		return
	}
	w.p("return nil, %s", w.errf(fmt.Sprintf("%s matches none of its variants", u.Name)))
}

func (w *writer) listDecoder(u *union) {
	w.p("first, err := acpjson.FirstElement(data)")
	w.p("if err != nil { return nil, err }")
	w.p("if first == nil {\n%s\n}", as(u.Variants[0], u))
	w.untaggedDecoder(u, "first")
}

func quoteAll(keys []string) string {
	var q []string
	for _, k := range keys {
		q = append(q, strconv.Quote(k))
	}
	return strings.Join(q, ", ")
}

// registry writes the map of every definition to its Go type, for the
// package's round-trip tests.
func (w *writer) registry(m *model) {
	w.p("// schemaTypes makes a new value of the Go type of each definition of the schema.")
	w.p("var schemaTypes = map[string]func() any{")
	names := make([]string, 0, len(m.bySchema))
	for name := range m.bySchema {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		w.p("%q: func() any { return new(%s) },", name, m.bySchema[name].Name)
	}
	w.p("}\n")
	w.p("// methodType makes new values of a method's params and result types; nil where it has none.")
	w.p("type methodType struct{ Request, Result, Notification func() any }\n")
	w.p("// methodTypes are the types of each method's messages, for the golden-file tests.")
	w.p("var methodTypes = map[string]methodType{")
	for _, mt := range m.methods {
		w.p("%q: {%s, %s, %s},", mt.Wire, newFunc(mt.Request), newFunc(mt.Response), newFunc(mt.Notification))
	}
	w.p("}")
}

func newFunc(typ string) string {
	if typ == "" {
		return "nil"
	}
	return fmt.Sprintf("func() any { return new(%s) }", typ)
}

func (w *writer) methods(m *model) {
	w.p("// The methods of the protocol, with the types of their params and results.")
	w.p("const (")
	for _, mt := range m.methods {
		w.comment(mt.doc())
		w.p("%s = %q", mt.Const, mt.Wire)
	}
	w.p(")")
}

// meta writes the type of _meta.
func (w *writer) meta() {
	w.p("// Meta is the _meta of every object: metadata the schema reserves for")
	w.p("// implementations, which attach it to their messages. A value other than")
	w.p("// an object reads as no metadata, as the schema says of a malformed _meta.")
	w.p("type Meta map[string]any\n")
	w.p("// UnmarshalJSON reads an object, and anything else as nil.")
	w.p("func (m *Meta) UnmarshalJSON(data []byte) error {")
	w.p("var v map[string]any")
	w.p("if json.Unmarshal(data, &v) != nil {\nv = nil\n}")
	w.p("*m = v\nreturn nil\n}\n")
}
