package acprpc

import (
	"encoding/json"
	"strconv"
)

// ID is a JSON-RPC request ID exactly as it appeared on the wire: an integer
// or a string. It is sent back byte for byte, so negative numbers, numbers
// above 2^53 and strings with escapes all survive the round trip, and 1 and
// "1" stay different IDs. The zero ID means "no ID" (a notification).
type ID struct {
	raw string
}

// Int64ID returns the numeric ID n.
func Int64ID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

// StringID returns the string ID s.
func StringID(s string) ID {
	b, _ := json.Marshal(s)
	return ID{raw: string(b)}
}

// IsZero reports whether the ID is absent.
func (id ID) IsZero() bool { return id.raw == "" }

// IsString reports whether the ID is a JSON string.
func (id ID) IsString() bool { return len(id.raw) > 0 && id.raw[0] == '"' }

// String returns the ID's JSON text, such as 7 or "abc".
func (id ID) String() string { return id.raw }

// MarshalJSON returns the ID's JSON text unchanged; the zero ID is null.
func (id ID) MarshalJSON() ([]byte, error) {
	if id.raw == "" {
		return []byte("null"), nil
	}
	return []byte(id.raw), nil
}

// idKey identifies an ID in the in-flight tables. Numbers are keyed by value
// and strings by their decoded text, so a peer that escapes a string ID
// differently in its $/cancel_request still finds the request.
type idKey struct {
	num   int64
	str   string
	isStr bool
}

// keyOf returns the key of a raw ID already checked by validID.
func keyOf(raw []byte) idKey {
	if raw[0] == '"' {
		return idKey{str: unquote(raw), isStr: true}
	}
	n, _ := strconv.ParseInt(string(raw), 10, 64)
	return idKey{num: n}
}

// validID reports whether raw is an ID this library can carry: a string, or
// an integer that fits in int64.
func validID(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	if raw[0] == '"' {
		return true
	}
	for i, c := range raw {
		if (c < '0' || c > '9') && !(i == 0 && c == '-') {
			return false
		}
	}
	_, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil
}

// unquote decodes a JSON string already checked by the scanner, copying only
// when it has escapes.
func unquote(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' {
			var s string
			_ = json.Unmarshal(raw, &s)
			return s
		}
	}
	return string(inner)
}

// parseOwnID reads an ID that may be one this side issued: a positive
// integer.
func parseOwnID(raw []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil && n > 0
}
