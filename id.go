package acprpc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
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
// differently in its $/cancel_request still finds the request; see idText
// for what cannot be decoded to text.
type idKey struct {
	num   int64
	str   string
	isStr bool
}

// keyOf returns the key of a raw ID already checked by validID.
func keyOf(raw []byte) idKey {
	if raw[0] == '"' {
		return idKey{str: idText(raw), isStr: true}
	}
	n, _ := strconv.ParseInt(string(raw), 10, 64)
	return idKey{num: n}
}

// idText is a string ID's key: its text, with what is not text kept
// distinct. Decoding to a Go string would turn every lone surrogate escape
// and every byte that is not UTF-8 into U+FFFD, so that "\ud800",
// "\udfff" and "\ufffd" were one ID. Here each of those is written as a
// byte that valid UTF-8 never holds (0xFF before a lone surrogate's two
// bytes, 0xFE before a stray byte) so that two IDs share a key exactly when
// they spell the same sequence of characters, lone surrogates and stray
// bytes.
func idText(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	key := make([]byte, 0, len(inner)+8)
	for i := 0; i < len(inner); {
		c := inner[i]
		switch {
		case c == '\\' && i+1 < len(inner) && inner[i+1] == 'u':
			var n int
			key, n = appendUnicodeEscape(key, inner[i:])
			i += n
		case c == '\\' && i+1 < len(inner):
			key = append(key, unescaped(inner[i+1]))
			i += 2
		default:
			r, size := utf8.DecodeRune(inner[i:])
			if r == utf8.RuneError && size == 1 {
				key = append(key, 0xFE, c)
			} else {
				key = append(key, inner[i:i+size]...)
			}
			i += size
		}
	}
	return string(key)
}

// appendUnicodeEscape appends the character that the \u escape at the
// start of b spells (with the low half that follows, for a surrogate
// pair), and says how many bytes it used.
func appendUnicodeEscape(key, b []byte) ([]byte, int) {
	r, ok := hex4(b)
	if !ok {
		return append(key, 0xFE, b[0]), 1 // not an escape the scanner lets through; kept apart all the same
	}
	if !utf16.IsSurrogate(r) {
		return utf8.AppendRune(key, r), 6
	}
	if r < 0xDC00 && len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
		if low, ok := hex4(b[6:]); ok && low >= 0xDC00 && low <= 0xDFFF {
			return utf8.AppendRune(key, utf16.DecodeRune(r, low)), 12
		}
	}
	return append(key, 0xFF, byte(r>>8), byte(r)), 6
}

// hex4 reads the four hex digits of the \u escape at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 6 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[2:6]), 16, 16)
	return rune(n), err == nil
}

// unescaped is the byte a one-letter escape stands for.
func unescaped(c byte) byte {
	switch c {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return c // '"', '\\' and '/' stand for themselves
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
