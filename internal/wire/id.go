package wire

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is the one rule for IDs: which raw IDs a connection carries
// (ValidID), and when two of them name the same request (KeyOf). Every
// reader of IDs, the parse, cancels, over-long messages and the remote
// transports' routing, goes through it.

// Key identifies an ID in the in-flight tables. Numbers are keyed by value
// and strings by their decoded text, so a peer that escapes a string ID
// differently in its $/cancel_request still finds the request; see idText
// for what cannot be decoded to text. A number and a string never share a
// key. The zero Key is no ID's.
type Key struct {
	num   int64
	str   string
	isStr bool
	valid bool
}

// ValidID reports whether raw is an ID this library can carry: a string, or
// an integer that fits in int64.
func ValidID(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	if raw[0] == '"' {
		return true
	}
	_, ok := integer(raw)
	return ok
}

// KeyOf returns raw's key, and whether raw is an ID this library carries
// (see ValidID); the key of what is no ID is the zero Key.
func KeyOf(raw []byte) (Key, bool) {
	switch {
	case len(raw) == 0:
		return Key{}, false
	case raw[0] == '"':
		return Key{str: idText(raw), isStr: true, valid: true}, true
	}
	n, ok := integer(raw)
	return Key{num: n, valid: ok}, ok
}

// Own returns the number of an ID this side may have issued: a positive
// integer.
func (k Key) Own() (int64, bool) {
	return k.num, k.valid && !k.isStr && k.num > 0
}

// integer reads a JSON integer that fits in int64.
func integer(raw []byte) (int64, bool) {
	for i, c := range raw {
		if (c < '0' || c > '9') && !(i == 0 && c == '-') {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
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
