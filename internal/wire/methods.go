package wire

// methodName is Unquote for a method name checked by the scanner: one of
// the Reader's Names is shared, any other is decoded and copied.
func (r *Reader) methodName(raw []byte) string {
	if name, ok := r.Names[string(raw[1:len(raw)-1])]; ok { // the conversion in a lookup does not allocate
		return name
	}
	return Unquote(raw)
}
