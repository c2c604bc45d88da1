package wire

import (
	"bytes"
	"math"
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
// a number whose value is an integer that fits in int64 (1e0 and 1.0 are
// the integer 1).
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

// Integer is integer, for the packages that read an integer as the wire
// reads an ID: exactly, however it is spelled.
func Integer(raw []byte) (int64, bool) { return integer(raw) }

// integer reads a JSON number whose value is an integer that fits in
// int64, however it is spelled: 1, 1.0, 1e0 and 10e-1 are all 1. The value
// is exact (no float is involved), so a number is an integer only when its
// digits say so, and one beyond 64 bits is none, whatever its spelling.
func integer(raw []byte) (int64, bool) {
	neg := len(raw) > 0 && raw[0] == '-'
	if neg {
		raw = raw[1:]
	}
	whole, frac, exp, ok := numberParts(raw)
	if !ok {
		return 0, false
	}
	if len(frac) == 0 && exp == 0 { // the common spelling: digits alone
		return fromDigits(whole, 0, neg)
	}
	digits := append(append(make([]byte, 0, len(whole)+len(frac)), whole...), frac...)
	return fromDigits(digits, exp-len(frac), neg)
}

// numberParts splits a JSON number without its sign into its whole digits,
// its fraction's digits and its exponent, which saturates far beyond any
// int64. It reports whether raw follows the JSON grammar.
func numberParts(raw []byte) (whole, frac []byte, exp int, ok bool) {
	i := digitRun(raw, 0)
	whole = raw[:i]
	if i == 0 || i > 1 && raw[0] == '0' {
		return nil, nil, 0, false
	}
	if i < len(raw) && raw[i] == '.' {
		end := digitRun(raw, i+1)
		if end == i+1 {
			return nil, nil, 0, false
		}
		frac, i = raw[i+1:end], end
	}
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		i++
		sign := 1
		if i < len(raw) && (raw[i] == '+' || raw[i] == '-') {
			if raw[i] == '-' {
				sign = -1
			}
			i++
		}
		end := digitRun(raw, i)
		if end == i {
			return nil, nil, 0, false
		}
		for _, c := range raw[i:end] {
			exp = min(exp*10+int(c-'0'), 1<<30)
		}
		exp, i = sign*exp, end
	}
	return whole, frac, exp, i == len(raw)
}

// digitRun is where the run of digits that starts at b[i] ends.
func digitRun(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

// fromDigits is the integer digits × 10^exp, if it is one that fits in
// int64 (with neg, its negation).
func fromDigits(digits []byte, exp int, neg bool) (int64, bool) {
	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
	}
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits, exp = digits[:len(digits)-1], exp+1
	}
	if len(digits) == 0 {
		return 0, true // zero, however many zeros and whatever exponent
	}
	if exp < 0 || len(digits)+exp > 19 {
		return 0, false // a fraction, or at least 10^19
	}
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	var n uint64
	for _, c := range digits {
		n = n*10 + uint64(c-'0') // at most 19 digits: no overflow of uint64
	}
	for range exp {
		n *= 10
	}
	if n > limit {
		return 0, false
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
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
