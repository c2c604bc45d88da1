package main

import (
	"fmt"

	"github.com/acpkit/acprpc/internal/acpschema"
)

// Roles of a union's variant.
const (
	roleTagged   = "tagged"   // its discriminator has a value of its own
	roleOther    = "other"    // any other value: kept whole, as received
	roleDefault  = "default"  // no discriminator: this variant
	roleUntagged = "untagged" // told apart by the members it requires
)

// fillUnion lists a union's variants, declaring the Go types that are not
// definitions of their own. owner is the union's schema name.
func (m *model) fillUnion(u *union, s, stable *acpschema.Schema, owner string) error {
	u.Disc = m.discriminator(s)
	variants := s.Union()
	u.List = u.Disc == "" && variants[0].Items != nil
	counts := map[string]int{}
	for _, v := range variants {
		if r := v.RefName(); r != "" {
			counts[r]++
		}
	}
	for _, v := range variants {
		tag, role := variantRole(u.Disc, v)
		sv := stableVariant(stable, u.Disc, v)
		vr := &variant{Tag: tag, Unstable: stable != nil && sv == nil}
		var err error
		if role == roleOther {
			vr.Type, err = m.unknownVariant(u, v, sv, owner, vr.Unstable)
		} else {
			vr.Type, err = m.variantType(u, owner, v, sv, tag, role, counts[v.RefName()] > 1, vr.Unstable)
		}
		if err != nil {
			return err
		}
		switch role {
		case roleOther:
			u.Unknown = vr
		case roleDefault:
			u.Default = vr
		}
		u.Variants = append(u.Variants, vr)
	}
	if u.Disc == "" {
		m.distinguish(u, variants)
	}
	return nil
}

// variantRole is a variant's tag and role.
func variantRole(disc string, v *acpschema.Schema) (string, string) {
	switch {
	case disc == "":
		return v.Title, roleUntagged
	case v.Properties.Get(disc) != nil:
		if c, ok := v.Properties.Get(disc).ConstString(); ok {
			return c, roleTagged
		}
		return "", roleOther
	case v.Title == "other":
		return "", roleOther
	}
	return v.Title, roleDefault
}

// stableVariant is v as the stable union has it, or nil.
func stableVariant(stable *acpschema.Schema, disc string, v *acpschema.Schema) *acpschema.Schema {
	if stable == nil {
		return nil
	}
	tag, role := variantRole(disc, v)
	for _, w := range stable.Union() {
		t, r := variantRole(disc, w)
		if t == tag && r == role && w.RefName() == v.RefName() {
			return w
		}
	}
	return nil
}

// variantType is the Go type of one variant: its own definition when it
// has one that is used once in this union, else a type declared for it.
func (m *model) variantType(u *union, owner string, v, stable *acpschema.Schema, tag, role string, shared, unstable bool) (string, error) {
	encoded := ""
	if role == roleTagged {
		encoded = fmt.Sprintf("%q:%q", u.Disc, tag)
	}
	label := tag
	if label == "" {
		label = v.RefName()
	}
	ref, inline := v.RefName(), ownProps(v, u.Disc)
	if ref != "" && len(inline) == 0 && !shared && !u.List {
		d := m.bySchema[ref]
		if d == nil || (d.Kind != kindStruct && d.Kind != kindWrapper) {
			return "", fmt.Errorf("variant %s is not an object", ref)
		}
		d.Implements = append(d.Implements, implement{U: u, Tag: encoded})
		return d.Name, nil
	}
	name, ok := variantNames[owner+"/"+label]
	if !ok {
		name = goName(label) + u.Name
	}
	d := &decl{Name: name, Kind: kindStruct, Doc: stableOr(stable, v).Description, Unstable: unstable || m.bySchema[owner].Unstable}
	d.Implements = append(d.Implements, implement{U: u, Tag: encoded})
	var err error
	switch {
	case u.List:
		d.Kind = kindSlice
		d.Base, _, err = m.goType(v.Items)
	case ref != "":
		def := m.defs.Get(ref)
		if d.Doc == "" {
			d.Doc = stableOr(m.stable.Get(ref), def).Description
		}
		err = m.fillStruct(d, def, m.stable.Get(ref))
	case stable != nil:
		err = m.fillStruct(d, inlineObject(v, u.Disc), inlineObject(stable, u.Disc))
	default:
		err = m.fillStruct(d, inlineObject(v, u.Disc), nil)
	}
	if err != nil {
		return "", err
	}
	if d.Doc == "" {
		d.Doc = fmt.Sprintf("%s is the %s %s.", name, u.Name, label)
	}
	return name, m.add(d)
}

// ownProps are a variant's properties other than its discriminator.
func ownProps(v *acpschema.Schema, disc string) []string {
	var out []string
	for _, p := range propNames(v) {
		if p != disc {
			out = append(out, p)
		}
	}
	return out
}

// inlineObject is a variant spelled inline, without its discriminator.
func inlineObject(v *acpschema.Schema, disc string) *acpschema.Schema {
	obj := &acpschema.Schema{Type: "object", Properties: &acpschema.Members{ByKey: map[string]*acpschema.Schema{}}}
	for _, p := range ownProps(v, disc) {
		obj.Properties.Names = append(obj.Properties.Names, p)
		obj.Properties.ByKey[p] = v.Properties.Get(p)
	}
	for _, r := range v.Required {
		if r != disc {
			obj.Required = append(obj.Required, r)
		}
	}
	return obj
}

// unknownVariant declares the variant for a tag this package does not
// know, which keeps the whole object as received.
func (m *model) unknownVariant(u *union, v, stable *acpschema.Schema, owner string, unstable bool) (string, error) {
	name := "Unknown" + u.Name
	if m.defs.Get(name) != nil {
		name = "Other" + u.Name // StateUpdate has a variant of its own named unknown
	}
	d := &decl{
		Name: name, Kind: kindUnknown, Disc: u.Disc, DiscField: goName(u.Disc), Of: u,
		Unstable: unstable || m.bySchema[owner].Unstable,
		Doc: fmt.Sprintf("%s is a %s whose %s this package does not know. The schema says:\n\n%s",
			name, u.Name, u.Disc, stableOr(stable, v).Description),
	}
	d.Implements = []implement{{U: u}}
	return d.Name, m.add(d)
}

// distinguish finds, for each variant of an untagged union, the members
// that only it requires.
func (m *model) distinguish(u *union, variants []*acpschema.Schema) {
	required := make([][]string, len(variants))
	for i, v := range variants {
		switch {
		case v.RefName() != "":
			required[i] = m.defs.Get(v.RefName()).Required
		case v.Items != nil:
			required[i] = m.defs.Get(v.Items.RefName()).Required
		default:
			required[i] = v.Required
		}
	}
	for i, vr := range u.Variants {
		others := map[string]bool{}
		for j, r := range required {
			if j != i {
				for _, k := range r {
					others[k] = true
				}
			}
		}
		for _, k := range required[i] {
			if !others[k] {
				vr.Keys = append(vr.Keys, k)
			}
		}
	}
}
