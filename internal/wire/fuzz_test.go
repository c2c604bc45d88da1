package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/acpkit/acprpc/internal/wire/wirefuzz"
)

// The fuzz targets check the reading of the wire against encoding/json, the
// reference for what is valid JSON and what an object's members are. Their
// seeds are in testdata/fuzz and run with every go test.

// FuzzParseLine: Parse never panics, agrees with json.Valid, and
// classifies a line as encoding/json reads it.
func FuzzParseLine(f *testing.F) {
	f.Fuzz(func(t *testing.T, line []byte) {
		r := Reader{Scope: "sessionId"}
		m, bad := r.Read(line)
		saysValid := bad == nil || bad.Code != CodeParseError
		if wirefuzz.Depth(line) < maxDepth-1 && saysValid != json.Valid(line) {
			t.Fatalf("Parse says valid=%v (%+v), json.Valid says %v", saysValid, bad, !saysValid)
		}
		if !saysValid {
			return
		}
		var obj map[string]json.RawMessage
		isObject := json.Unmarshal(line, &obj) == nil && obj != nil
		switch {
		case bad != nil:
			fuzzCheckRejected(t, bad, obj, isObject)
		case !isObject:
			t.Fatalf("classified %q as %d, but it is not an object", line, m.Kind)
		default:
			fuzzCheckMessage(t, m, obj)
		}
	})
}

// fuzzCheckRejected checks that a valid JSON line Parse refused is
// indeed not a usable message, and that the ID its answer carries is the
// line's.
func fuzzCheckRejected(t *testing.T, bad *Problem, obj map[string]json.RawMessage, isObject bool) {
	if bad.Code != CodeInvalidRequest {
		t.Fatalf("valid JSON refused with code %d", bad.Code)
	}
	if !isObject {
		return
	}
	if bad.ID != nil && (!ValidID(bad.ID) || !bytes.Equal(bad.ID, obj["id"])) {
		t.Fatalf("the error answer carries id %s, the line has %s", bad.ID, obj["id"])
	}
	if fuzzUsable(obj) {
		t.Fatalf("refused (%s) a usable message: %v", bad.Msg, obj)
	}
}

// fuzzUsable says, with encoding/json's reading, whether obj is a message
// Parse must accept.
func fuzzUsable(obj map[string]json.RawMessage) bool {
	if wirefuzz.IsAnswer(obj) {
		return true // an answer is never refused: it is never answered
	}
	if v, ok := obj["jsonrpc"]; ok && !fuzzIsString(v, "2.0") {
		return false
	}
	method, hasMethod := obj["method"]
	if !hasMethod || method[0] != '"' {
		return false
	}
	if p, ok := obj["params"]; ok && p[0] != '{' && p[0] != '[' && string(p) != "null" {
		return false
	}
	id, hasID := obj["id"]
	return !hasID || fuzzIsID(id)
}

func fuzzIsString(raw json.RawMessage, want string) bool {
	var s string
	return json.Unmarshal(raw, &s) == nil && s == want
}

// fuzzIsID says whether raw is a string, or a number whose value is an
// integer that fits in int64, read by encoding/json and math/big.
func fuzzIsID(raw json.RawMessage) bool {
	if raw[0] == '"' {
		return true
	}
	_, ok := fuzzInteger(raw)
	return ok
}

// fuzzInteger is the value of a JSON number that is an integer of 64 bits,
// computed exactly by math/big. Exponents far out of range are settled
// first, so that big never builds a number of a billion digits.
func fuzzInteger(raw []byte) (int64, bool) {
	var num json.Number
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') || json.Unmarshal(raw, &num) != nil {
		return 0, false
	}
	mantissa, exponent, _ := strings.Cut(strings.ToLower(num.String()), "e")
	digits := strings.Trim(strings.NewReplacer("-", "", ".", "").Replace(mantissa), "0")
	if digits == "" {
		return 0, true // zero
	}
	if exponent != "" {
		e, err := strconv.Atoi(exponent)
		if err != nil || e > len(mantissa)+40 || e < -len(mantissa)-40 {
			return 0, false // far beyond int64, or a fraction
		}
	}
	r, ok := new(big.Rat).SetString(num.String())
	if !ok || !r.IsInt() || !r.Num().IsInt64() {
		return 0, false
	}
	return r.Num().Int64(), true
}

// fuzzCheckMessage checks a message against the line's members as
// encoding/json reads them.
func fuzzCheckMessage(t *testing.T, m Message, obj map[string]json.RawMessage) {
	if wirefuzz.IsAnswer(obj) {
		if m.Kind != Response {
			t.Fatalf("an answer classified as kind %d: %v", m.Kind, obj)
		}
		fuzzCheckResponse(t, m, obj)
		return
	}
	if v, ok := obj["jsonrpc"]; ok && !fuzzIsString(v, "2.0") {
		t.Fatalf("accepted jsonrpc %s", v)
	}
	id, hasID := obj["id"]
	method := obj["method"]
	switch {
	case m.Kind == Notification && !hasID:
	case m.Kind == Request && hasID:
		fuzzSame(t, "id", m.ID, id)
		fuzzCheckID(t, m.ID)
	default:
		t.Fatalf("classified as kind %d: %v", m.Kind, obj)
	}
	if utf8.Valid(method) {
		var name string
		if json.Unmarshal(method, &name) != nil || name != m.Method {
			t.Fatalf("method %q, the line has %s", m.Method, method)
		}
	}
	fuzzSame(t, "params", m.Params, obj["params"])
	fuzzCheckSession(t, m)
}

// fuzzCheckResponse checks an answer: a null error or a null result beside
// the other member means nothing, and an answer that breaks the protocol
// is marked invalid.
func fuzzCheckResponse(t *testing.T, m Message, obj map[string]json.RawMessage) {
	result, errObj := obj["result"], obj["error"]
	if string(errObj) == "null" {
		errObj = nil
	}
	if errObj != nil && string(result) == "null" {
		result = nil
	}
	fuzzSame(t, "result", m.Result, result)
	fuzzSame(t, "error", m.Error, errObj)
	v, hasVersion := obj["jsonrpc"]
	id, hasID := obj["id"]
	named := hasID && fuzzIsID(id)
	broken := hasVersion && !fuzzIsString(v, "2.0") || (result == nil) == (errObj == nil) ||
		hasID && string(id) != "null" && !named || !named && result != nil
	if broken != (m.Invalid != "") {
		t.Fatalf("answer %v: invalid is %q", obj, m.Invalid)
	}
	if named {
		fuzzSame(t, "id", m.ID, id)
	} else if m.ID != nil {
		t.Fatalf("response id %s carried, the line has %s", m.ID, id)
	}
}

func fuzzSame(t *testing.T, what string, got, want []byte) {
	if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
		t.Fatalf("%s is %q, the line has %q", what, got, want)
	}
}

// fuzzCheckID checks that a request's ID is carried back byte for byte in
// its answer and keeps its identity.
func fuzzCheckID(t *testing.T, id []byte) {
	if !ValidID(id) {
		t.Fatalf("request id %s is not valid", id)
	}
	var f Frame
	if err := f.Result(id, json.RawMessage(`true`)); err != nil {
		t.Fatal(err)
	}
	answer, bad := Parse(f.Buf.Bytes())
	k, ok := KeyOf(id)
	if back, _ := KeyOf(answer.ID); bad != nil || answer.Kind != Response || !bytes.Equal(answer.ID, id) || !ok || back != k {
		t.Fatalf("id %s comes back as %s (%+v)", id, answer.ID, bad)
	}
	if k.isStr && utf8.ValidString(k.str) && !fuzzIsString(id, k.str) {
		t.Fatalf("id %s keyed as %q", id, k.str) // an ID that is all text is keyed by its text
	}
	if n, ok := fuzzInteger(id); !k.isStr && (!ok || n != k.num) {
		t.Fatalf("id %s keyed as %d", id, k.num)
	}
}

// fuzzCheckSession checks the scope against params.sessionId, the Reader's
// Scope.
func fuzzCheckSession(t *testing.T, m Message) {
	var params map[string]json.RawMessage
	want := ""
	if json.Unmarshal(m.Params, &params) == nil {
		if sid, ok := params["sessionId"]; ok && sid[0] == '"' {
			if !utf8.Valid(sid) {
				return
			}
			_ = json.Unmarshal(sid, &want)
		}
	}
	if m.Scope != want {
		t.Fatalf("scope %q, params %s", m.Scope, m.Params)
	}
}

// FuzzCancelParams: the requestId of $/cancel_request params is found as
// encoding/json finds it, and accepted exactly when it is an ID.
func FuzzCancelParams(f *testing.F) {
	f.Fuzz(func(t *testing.T, params []byte) {
		raw := Member(params, "requestId")
		_, ok := KeyOf(raw)
		if wirefuzz.Depth(params) >= maxDepth-1 {
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(params, &obj) != nil || obj == nil {
			if raw != nil {
				t.Fatalf("requestId %s found in %q, which is not an object", raw, params)
			}
			return
		}
		want, has := obj["requestId"]
		fuzzSame(t, "requestId", raw, want)
		if has && ok != fuzzIsID(want) {
			t.Fatalf("requestId %s: validID says %v", want, ok)
		}
	})
}

// FuzzRawResult: a handler's json.RawMessage result goes out compact on one
// line when it is JSON, and is answered -32603 when it is not; json.RawMessage
// params are sent compact, or refused before anything is sent.
func FuzzRawResult(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		if wirefuzz.Depth(raw) >= maxDepth-1 {
			return
		}
		valid := json.Valid(raw)
		var compact bytes.Buffer
		if valid {
			_ = json.Compact(&compact, raw)
		}
		var r Frame
		err := r.Result([]byte("1"), json.RawMessage(raw))
		switch {
		case valid && err != nil:
			t.Fatalf("valid %q refused: %v", raw, err)
		case !valid && err == nil:
			t.Fatalf("invalid %q written: %s", raw, r.Buf.Bytes())
		case err == nil:
			want := `{"jsonrpc":"2.0","id":1,"result":` + compact.String() + `}`
			if got := r.Buf.String(); got != want || bytes.ContainsAny(r.Buf.Bytes(), "\n\r") {
				t.Fatalf("%q written as %q, want %q", raw, got, want)
			}
		}
		var n Frame
		err = n.Request(nil, "m", json.RawMessage(raw))
		// Params go out when they are valid JSON and structured, as
		// JSON-RPC requires: an object or an array.
		structured := valid && (compact.Bytes()[0] == '{' || compact.Bytes()[0] == '[')
		if (err == nil) != structured {
			t.Fatalf("params %q: encoded %v, valid %v, structured %v", raw, err == nil, valid, structured)
		}
		if err == nil {
			if got := Member(n.Buf.Bytes(), "params"); !bytes.Equal(got, compact.Bytes()) {
				t.Fatalf("params %q sent as %q", raw, n.Buf.Bytes())
			}
		}
	})
}

// FuzzIDKey: two string IDs share a key exactly when they spell the same
// characters, lone surrogates and bytes that are not UTF-8 included, as
// read by fuzzIDChars, a decoder written apart from the library's.
func FuzzIDKey(f *testing.F) {
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if !fuzzStringID(a) || !fuzzStringID(b) {
			return
		}
		ka, _ := KeyOf(a)
		kb, _ := KeyOf(b)
		same := ka == kb
		if want := slices.Equal(fuzzIDChars(a), fuzzIDChars(b)); same != want {
			t.Fatalf("ids %q and %q: same key %v, same characters %v", a, b, same, want)
		}
	})
}

// fuzzStringID says whether raw is a string ID as the parser lets it
// through: one valid JSON string.
func fuzzStringID(raw []byte) bool {
	s := scanner{b: raw}
	return len(raw) > 0 && raw[0] == '"' && s.str() == nil && s.i == len(raw)
}

// fuzzIDChars reads a JSON string in two steps: first into code units
// (escapes), runes (valid UTF-8) and stray bytes, then pairing surrogate
// halves that follow each other.
func fuzzIDChars(raw []byte) []string {
	type unit struct {
		kind byte // 'u' an escaped code unit, 'r' a rune, 'b' a stray byte
		v    rune
	}
	var units []unit
	in := raw[1 : len(raw)-1]
	for i := 0; i < len(in); {
		switch {
		case in[i] == '\\' && in[i+1] == 'u':
			n, _ := strconv.ParseUint(string(in[i+2:i+6]), 16, 32)
			units = append(units, unit{'u', rune(n)})
			i += 6
		case in[i] == '\\':
			var s string
			_ = json.Unmarshal([]byte(`"`+string(in[i:i+2])+`"`), &s)
			units = append(units, unit{'r', []rune(s)[0]})
			i += 2
		default:
			r, size := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && size == 1 {
				units = append(units, unit{'b', rune(in[i])})
			} else {
				units = append(units, unit{'r', r})
			}
			i += size
		}
	}
	var chars []string
	for i := 0; i < len(units); i++ {
		u := units[i]
		switch {
		case u.kind == 'b':
			chars = append(chars, fmt.Sprintf("byte %02x", u.v))
		case u.kind == 'u' && u.v >= 0xD800 && u.v < 0xDC00 && i+1 < len(units) &&
			units[i+1].kind == 'u' && units[i+1].v >= 0xDC00 && units[i+1].v < 0xE000:
			chars = append(chars, fmt.Sprintf("char %x", 0x10000+(u.v-0xD800)<<10+(units[i+1].v-0xDC00)))
			i++
		case u.kind == 'u' && u.v >= 0xD800 && u.v < 0xE000:
			chars = append(chars, fmt.Sprintf("half %x", u.v))
		default:
			chars = append(chars, fmt.Sprintf("char %x", u.v))
		}
	}
	return chars
}

// FuzzTooLargeEnvelope: the scan of an over-long message, fed in parts of
// any size, finds the top-level ID and kind that encoding/json finds in the
// message read whole, and that Parse finds: the answer to a message dropped
// for its size carries the ID the answer to it read whole would.
func FuzzTooLargeEnvelope(f *testing.F) {
	f.Fuzz(func(t *testing.T, msg []byte, step uint8) {
		var e Envelope
		n := int(step)%13 + 1
		for i := 0; i < len(msg); i += n {
			e.Feed(msg[i:min(i+n, len(msg))])
		}
		id, isResponse := e.ID(), e.IsResponse()
		if wirefuzz.Depth(msg) >= maxDepth-1 || !json.Valid(msg) {
			return
		}
		fuzzSameReading(t, msg, id, isResponse)
		var obj map[string]json.RawMessage
		if json.Unmarshal(msg, &obj) != nil || obj == nil {
			if id != nil || isResponse {
				t.Fatalf("%q is no object, but the scan found id %s, response %v", msg, id, isResponse)
			}
			return
		}
		want, ok := obj["id"]
		if !ok || !fuzzIsID(want) || len(want) > idKept {
			want = nil
		}
		fuzzSame(t, "id", id, want)
		if isResponse != wirefuzz.IsAnswer(obj) {
			t.Fatalf("%q: the scan says response %v", msg, isResponse)
		}
	})
}

// fuzzSameReading checks the Envelope's reading of a valid message against
// Parse's: the same kind of answer, and the ID an answer to it would carry.
func fuzzSameReading(t *testing.T, msg, id []byte, isResponse bool) {
	m, bad := Parse(msg)
	if (bad == nil && m.Kind == Response) != isResponse {
		t.Fatalf("%q: the scan says response %v, Parse %d %+v", msg, isResponse, m.Kind, bad)
	}
	parsed := m.ID
	if bad != nil {
		parsed = bad.ID
	}
	if len(parsed) <= idKept && !bytes.Equal(parsed, id) {
		t.Fatalf("%q: the scan finds id %s, Parse %s", msg, id, parsed)
	}
}
