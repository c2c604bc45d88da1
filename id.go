package acprpc

import (
	"encoding/json"
	"strconv"

	"github.com/acpkit/acprpc/internal/wire"
)

// ID is a JSON-RPC request ID exactly as it appeared on the wire: a string,
// or a number whose value is an integer of 64 bits, however spelled (1, 1.0
// and 1e0 are one ID, the integer 1). It is sent back byte for byte, so
// negative numbers, numbers above 2^53, other spellings of integers and
// strings with escapes all survive the round trip, and 1 and "1" stay
// different IDs. The zero ID means "no ID" (a notification).
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

// IDKey identifies a request ID the way a Conn matches them: numbers by
// value (1, 1.0 and 1e0 are one ID), strings by their text however they
// are escaped, and a number never as a string. Unlike ID, whose value is
// the ID's spelling, it is comparable as the ID, to key a table of
// requests in flight. The zero IDKey is the zero ID's, and that of every
// ID a Conn cannot carry.
type IDKey struct {
	key wire.Key
}

// Key returns the IDKey of id.
func (id ID) Key() IDKey {
	k, _ := wire.KeyOf([]byte(id.raw))
	return IDKey{k}
}
