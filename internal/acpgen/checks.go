package main

import (
	"fmt"
	"strconv"
	"strings"
)

// What decoding checks, beyond what encoding/json does: a struct's required
// members are present (and not null, unless the schema lets them be), a
// list's elements are not null unless the schema lets them be, and
// a field of a closed enum, one whose schema lists every value it takes,
// holds one of them. A newer peer's new optional members are ignored, and
// open enums (v2's, and v1's that accept other values) take any value;
// where the schema reads a malformed member as absent
// (x-deserialize-default-on-error), an enum value it does not list reads as
// unset instead of failing the message. The SDK's validators do the same.

// markChecks notes, once every declaration is filled, which fields are of
// a closed enum.
func (m *model) markChecks() {
	for _, d := range m.decls {
		for _, f := range d.Fields {
			name := strings.TrimPrefix(f.Type, "[]")
			if e := m.byName[name]; e != nil && e.Kind == kindEnum && e.Closed {
				f.Enum, f.EnumList = name, name != f.Type
			}
			if takesAnyNull(m, f.Type) {
				f.Nullable = true
			}
			if takesAnyNull(m, name) {
				f.NoNullItems = false // a list of any JSON, or of a union null is a value of
			}
		}
	}
}

// hasChecks reports whether decoding d checks anything, or reads a member
// leniently.
func hasChecks(d *decl) bool {
	for _, f := range d.Fields {
		if f.Required || f.Enum != "" || lenient(f) || f.NoNullItems {
			return true
		}
	}
	return false
}

// lenient reports whether the schema reads a malformed value of f as
// absent, or leaves out its malformed elements; _meta's type does that
// itself.
func lenient(f *field) bool { return (f.DefaultOnError || f.SkipInvalid) && f.Type != metaType }

// membersVar writes d's acpjson.Members, and returns its name, or "nil".
func (w *writer) membersVar(d *decl) string {
	var set, present, lists, def, skip []string
	for _, f := range d.Fields {
		if f.NoNullItems {
			lists = append(lists, strconv.Quote(f.JSON))
		}
		switch {
		case f.Required && f.Nullable:
			present = append(present, strconv.Quote(f.JSON))
		case f.Required:
			set = append(set, strconv.Quote(f.JSON))
		}
		switch {
		case !lenient(f):
		case f.SkipInvalid:
			skip = append(skip, strconv.Quote(f.JSON))
		default:
			def = append(def, strconv.Quote(f.JSON))
		}
	}
	if len(set)+len(present)+len(lists)+len(def)+len(skip) == 0 {
		return "nil"
	}
	name := "members" + d.Name
	w.p("// %s is what the schema says of the members of %s beyond their types.", name, d.Name)
	w.p("var %s = &acpjson.Members{What: %q, Set: %s, Present: %s, Lists: %s, DefaultOnError: %s, SkipInvalid: %s}\n",
		name, w.pkg+": "+d.Name, stringList(set), stringList(present), stringList(lists), stringList(def), stringList(skip))
	return name
}

func stringList(quoted []string) string {
	if len(quoted) == 0 {
		return "nil"
	}
	return "[]string{" + strings.Join(quoted, ", ") + "}"
}

// enumChecks writes the checks of d's closed-enum fields, on the decoded v.
func (w *writer) enumChecks(d *decl) {
	for _, f := range d.Fields {
		if f.Enum == "" {
			continue
		}
		bad := w.errf(fmt.Sprintf("%s's %s %%q is not one of its values", d.Name, f.JSON), "v."+f.Name)
		switch {
		case f.EnumList && f.SkipInvalid:
			w.p("v.%s = slices.DeleteFunc(v.%s, func(e %s) bool { return !e.known() }) // left out, as the schema says", f.Name, f.Name, f.Enum)
		case f.EnumList && f.DefaultOnError:
			w.p("if slices.ContainsFunc(v.%s, func(e %s) bool { return !e.known() }) { v.%s = nil } // read as unset, as the schema says", f.Name, f.Enum, f.Name)
		case f.EnumList:
			w.p("for _, e := range v.%s {", f.Name)
			w.p("if !e.known() { return %s }", w.errf(fmt.Sprintf("%s's %s holds %%q, not one of its values", d.Name, f.JSON), "e"))
			w.p("}")
		case f.DefaultOnError:
			w.p("if !v.%s.known() { v.%s = \"\" } // read as unset, as the schema says", f.Name, f.Name)
		case f.Required:
			w.p("if !v.%s.known() { return %s }", f.Name, bad)
		default:
			w.p("if v.%s != \"\" && !v.%s.known() { return %s }", f.Name, f.Name, bad)
		}
	}
}

// checkedUnmarshal writes the UnmarshalJSON of a struct with checks and
// no variant.
func (w *writer) checkedUnmarshal(d *decl) {
	if d.Union != nil || !hasChecks(d) {
		return
	}
	l := w.membersVar(d)
	w.p("// UnmarshalJSON reads the %s, refusing it without its required members or with", d.Name)
	w.p("// a value its closed enums do not list, and reading the members the schema")
	w.p("// makes lenient as it says; null changes nothing.")
	w.p("func (v *%s) UnmarshalJSON(data []byte) error {", d.Name)
	w.p("if acpjson.IsNull(data) { return nil }")
	w.p("type plain %s", d.Name)
	w.p("if err := acpjson.Into(data, (*plain)(v), %s); err != nil { return err }", l)
	w.enumChecks(d)
	w.p("return nil\n}\n")
}

// knownMethod writes a closed enum's known, which reports whether a value
// is one the schema lists.
func (w *writer) knownMethod(d *decl) {
	if !d.Closed || len(d.Consts) == 0 {
		return
	}
	var names []string
	for _, c := range d.Consts {
		names = append(names, c.Name)
	}
	w.p("// known reports whether e is one of the values the schema lists.")
	w.p("func (e %s) known() bool {", d.Name)
	w.p("switch e {\ncase %s:\nreturn true\n}\nreturn false\n}\n", strings.Join(names, ", "))
}

// takesAnyNull reports whether null is a value of the Go type typ: a value
// of any shape, or a scalar union's (v1's RequestId).
func takesAnyNull(m *model, typ string) bool {
	if typ == "any" || typ == "json.RawMessage" {
		return true
	}
	d := m.byName[typ]
	return d != nil && (d.Kind == kindRaw || (d.Union != nil && d.Union.Scalar && scalarTakes(d.Union, jsonNull, jsonAny)))
}

// scalarTakes reports whether a scalar union has a variant of one of kinds.
func scalarTakes(u *union, kinds ...string) bool {
	for _, v := range u.Variants {
		for _, k := range kinds {
			if v.Tag == k {
				return true
			}
		}
	}
	return false
}
