// Package wirefuzz is what the fuzz targets of the wire compare the
// library's reading with: encoding/json's view of a message, and how deep
// a line nests, so that lines at the parser's nesting bound, where the two
// may differ by one, are left out of the checks. It serves the fuzz targets
// of internal/wire and of the root package alike.
package wirefuzz

import "encoding/json"

// Depth is the deepest nesting of arrays and objects in b, strings
// skipped; b need not be valid JSON.
func Depth(b []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// IsAnswer says whether obj, a message's members as encoding/json reads
// them, is an answer: a result or an error member, and no method or a null
// one.
func IsAnswer(obj map[string]json.RawMessage) bool {
	method, hasMethod := obj["method"]
	_, r := obj["result"]
	_, e := obj["error"]
	return (!hasMethod || string(method) == "null") && (r || e)
}
