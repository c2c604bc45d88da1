package acprpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The fuzz targets check the parser against encoding/json, the reference
// for what is valid JSON and what an object's members are. Their seeds are
// in testdata/fuzz and run with every go test.

// FuzzParseLine: parseMessage never panics, agrees with json.Valid, and
// classifies a line as encoding/json reads it.
func FuzzParseLine(f *testing.F) {
	f.Fuzz(func(t *testing.T, line []byte) {
		m, bad := parseMessage(line)
		saysValid := bad == nil || bad.code != CodeParseError
		if fuzzDepth(line) < maxDepth-1 && saysValid != json.Valid(line) {
			t.Fatalf("parseMessage says valid=%v (%+v), json.Valid says %v", saysValid, bad, !saysValid)
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
			t.Fatalf("classified %q as %d, but it is not an object", line, m.kind)
		default:
			fuzzCheckMessage(t, m, obj)
		}
	})
}

// fuzzDepth is the deepest nesting of arrays and objects in b.
func fuzzDepth(b []byte) int {
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

// fuzzCheckRejected checks that a valid JSON line parseMessage refused is
// indeed not a usable message, and that the ID its answer carries is the
// line's.
func fuzzCheckRejected(t *testing.T, bad *messageError, obj map[string]json.RawMessage, isObject bool) {
	if bad.code != CodeInvalidRequest {
		t.Fatalf("valid JSON refused with code %d", bad.code)
	}
	if !isObject {
		return
	}
	if bad.id != nil && (!validID(bad.id) || !bytes.Equal(bad.id, obj["id"])) {
		t.Fatalf("the error answer carries id %s, the line has %s", bad.id, obj["id"])
	}
	if fuzzUsable(obj) {
		t.Fatalf("refused (%s) a usable message: %v", bad.msg, obj)
	}
}

// fuzzUsable says, with encoding/json's reading, whether obj is a message
// parseMessage must accept.
func fuzzUsable(obj map[string]json.RawMessage) bool {
	if fuzzIsAnswer(obj) {
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

// fuzzIsAnswer says whether obj is an answer: a result or an error member,
// and no method or a null one.
func fuzzIsAnswer(obj map[string]json.RawMessage) bool {
	method, hasMethod := obj["method"]
	_, r := obj["result"]
	_, e := obj["error"]
	return (!hasMethod || string(method) == "null") && (r || e)
}

func fuzzIsString(raw json.RawMessage, want string) bool {
	var s string
	return json.Unmarshal(raw, &s) == nil && s == want
}

// fuzzIsID says whether raw is a string or an integer that fits in int64,
// read by encoding/json.
func fuzzIsID(raw json.RawMessage) bool {
	if raw[0] == '"' {
		return true
	}
	var n int64
	isNumber := raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9'
	return isNumber && json.Unmarshal(raw, &n) == nil && !bytes.ContainsAny(raw, ".eE")
}

// fuzzCheckMessage checks a message against the line's members as
// encoding/json reads them.
func fuzzCheckMessage(t *testing.T, m message, obj map[string]json.RawMessage) {
	if fuzzIsAnswer(obj) {
		if m.kind != kindResponse {
			t.Fatalf("an answer classified as kind %d: %v", m.kind, obj)
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
	case m.kind == kindNotification && !hasID:
	case m.kind == kindRequest && hasID:
		fuzzSame(t, "id", m.id, id)
		fuzzCheckID(t, m.id)
	default:
		t.Fatalf("classified as kind %d: %v", m.kind, obj)
	}
	if utf8.Valid(method) {
		var name string
		if json.Unmarshal(method, &name) != nil || name != m.method {
			t.Fatalf("method %q, the line has %s", m.method, method)
		}
	}
	fuzzSame(t, "params", m.params, obj["params"])
	fuzzCheckSession(t, m)
}

// fuzzCheckResponse checks an answer: a null error or a null result beside
// the other member means nothing, and an answer that breaks the protocol
// is marked invalid.
func fuzzCheckResponse(t *testing.T, m message, obj map[string]json.RawMessage) {
	result, errObj := obj["result"], obj["error"]
	if string(errObj) == "null" {
		errObj = nil
	}
	if errObj != nil && string(result) == "null" {
		result = nil
	}
	fuzzSame(t, "result", m.result, result)
	fuzzSame(t, "error", m.errObj, errObj)
	v, hasVersion := obj["jsonrpc"]
	broken := hasVersion && !fuzzIsString(v, "2.0") || (result == nil) == (errObj == nil)
	if broken != (m.invalid != "") {
		t.Fatalf("answer %v: invalid is %q", obj, m.invalid)
	}
	if id, ok := obj["id"]; ok && fuzzIsID(id) {
		fuzzSame(t, "id", m.id, id)
	} else if m.id != nil {
		t.Fatalf("response id %s carried, the line has %s", m.id, id)
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
	if !validID(id) {
		t.Fatalf("request id %s is not valid", id)
	}
	f, err := resultFrame(id, json.RawMessage(`true`))
	if err != nil {
		t.Fatal(err)
	}
	defer f.release()
	answer, bad := parseMessage(bytes.TrimSuffix(f.buf.Bytes(), []byte("\n")))
	if bad != nil || answer.kind != kindResponse || !bytes.Equal(answer.id, id) || keyOf(answer.id) != keyOf(id) {
		t.Fatalf("id %s comes back as %s (%+v)", id, answer.id, bad)
	}
	k := keyOf(id)
	if k.isStr && utf8.ValidString(k.str) && !fuzzIsString(id, k.str) {
		t.Fatalf("id %s keyed as %q", id, k.str) // an ID that is all text is keyed by its text
	}
	if n, err := strconv.ParseInt(string(id), 10, 64); !k.isStr && (err != nil || n != k.num) {
		t.Fatalf("id %s keyed as %d", id, k.num)
	}
}

// fuzzCheckSession checks the session ID against params.sessionId.
func fuzzCheckSession(t *testing.T, m message) {
	var params map[string]json.RawMessage
	want := ""
	if json.Unmarshal(m.params, &params) == nil {
		if sid, ok := params["sessionId"]; ok && sid[0] == '"' {
			if !utf8.Valid(sid) {
				return
			}
			_ = json.Unmarshal(sid, &want)
		}
	}
	if m.sessionID != want {
		t.Fatalf("session %q, params %s", m.sessionID, m.params)
	}
}

// FuzzCancelParams: the requestId of $/cancel_request params is found as
// encoding/json finds it, and accepted exactly when it is an ID.
func FuzzCancelParams(f *testing.F) {
	f.Fuzz(func(t *testing.T, params []byte) {
		raw := member(params, "requestId")
		ok := validID(raw)
		if ok {
			keyOf(raw) // must not panic
		}
		if fuzzDepth(params) >= maxDepth-1 {
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

// fuzzProbe is the request sent after the fuzzed input; its answer shows the
// connection survived. It fits the small size limit.
const fuzzProbe = `{"jsonrpc":"2.0","id":"zz-probe","method":"echo"}`

// fuzzCalls is how many calls of ours are pending when the fuzzed input
// arrives: their IDs are 1 to fuzzCalls, and the input may answer them.
const fuzzCalls = 3

// FuzzStream: whatever the peer sends, the connection stays open, answers a
// valid request sent afterwards, and writes only valid JSON: answers, each
// to a request of the input (never to an answer, whose ID is ours), and our
// own calls. Our calls are pending while the input is read, and every one
// that the input answers ends with that answer (or an error saying why it
// is unusable), never by waiting for the connection to close.
func FuzzStream(f *testing.F) {
	f.Fuzz(func(t *testing.T, input []byte, small bool) {
		opts := &Options{}
		if small {
			opts.MaxMessageSize = 64
		}
		inR, inW := fuzzPipe(t)
		outR, outW := fuzzPipe(t)
		echo := HandlerFunc(func(_ context.Context, req *Request) (any, error) { return req.Params, nil })
		c := NewConn(context.Background(), NewStreamPipes(inR, outW), echo, opts)
		calls := make(chan fuzzCallEnd, fuzzCalls)
		for range fuzzCalls {
			go func() {
				var result json.RawMessage
				err := c.Call(context.Background(), "peer/call", nil, &result)
				calls <- fuzzCallEnd{err}
			}()
		}
		out := &fuzzOutput{called: make(chan struct{}), probed: make(chan struct{})}
		done := make(chan struct{})
		go func() {
			defer close(done)
			out.read(outR)
		}()
		fuzzWait(t, out.called, "our calls to be sent", input)
		go func() {
			_, _ = inW.Write(input)
			_, _ = inW.Write([]byte("\n" + fuzzProbe + "\n"))
		}()
		fuzzWait(t, out.probed, "the answer to the probe", input)
		if err := c.Err(); err != nil {
			t.Fatalf("connection closed: %v", err)
		}
		owed := fuzzReadInput(input, opts.MaxMessageSize)
		answered := 0
		for id := range fuzzCalls {
			if owed.answers[strconv.Itoa(id+1)] {
				answered++
			}
		}
		for range answered {
			select {
			case end := <-calls:
				if errors.Is(end.err, ErrConnClosed) {
					t.Fatalf("input %.500q: a call answered by it ended only with the connection", input)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("input %.500q answers %d calls, fewer returned", input, answered)
			}
		}
		c.Close()
		for range fuzzCalls - answered {
			<-calls
		}
		<-done
		inW.Close()
		outR.Close()
		for _, p := range out.check(owed) {
			t.Errorf("input %.500q: %s", input, p)
		}
	})
}

type fuzzCallEnd struct{ err error }

func fuzzWait(t *testing.T, ch <-chan struct{}, what string, input []byte) {
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
		t.Fatalf("no %s after %.500q; goroutines:\n%s", what, input, b.String())
	}
}

func fuzzPipe(t *testing.T) (*os.File, *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}

// fuzzInput is what the input's lines, read by encoding/json, owe: the IDs
// of its requests (which may be answered), the IDs its answers name, and
// whether some line over the size limit is not JSON (the ID the Conn finds
// in such a line is its own reading).
type fuzzInput struct {
	requests   map[string]bool
	answers    map[string]bool
	unreadable bool
}

func fuzzReadInput(input []byte, limit int) fuzzInput {
	in := fuzzInput{requests: map[string]bool{}, answers: map[string]bool{}}
	for _, line := range bytes.Split(input, []byte("\n")) {
		line = bytes.TrimRight(line, "\r")
		var obj map[string]json.RawMessage
		if fuzzDepth(line) >= maxDepth-1 || json.Unmarshal(line, &obj) != nil || obj == nil {
			in.unreadable = in.unreadable || limit > 0 && len(line) > limit
			continue
		}
		id, ok := obj["id"]
		switch {
		case !ok:
		case fuzzIsAnswer(obj):
			in.answers[string(id)] = true
		default:
			in.requests[string(id)] = true
		}
	}
	return in
}

// fuzzOutput is what the connection wrote, read to its end.
type fuzzOutput struct {
	called, probed chan struct{} // closed when our calls, and the probe's answer, have been read
	// The fields below belong to the reading goroutine until it ends.
	calls    int
	isProbed bool
	answers  []string // the ID of every answer but the probe's
	problems []string
}

func (o *fuzzOutput) read(out *os.File) {
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		o.line(sc.Bytes())
	}
	// The output ended: the waits go on, and fail on the connection's error.
	if o.calls < fuzzCalls {
		close(o.called)
	}
	if !o.isProbed {
		close(o.probed)
	}
}

func (o *fuzzOutput) line(line []byte) {
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	switch {
	case !json.Valid(line) || json.Unmarshal(line, &m) != nil || m.JSONRPC != "2.0":
		o.problems = append(o.problems, "invalid JSON-RPC written: "+string(line))
	case m.Method != nil && *m.Method == "peer/call" && m.ID != nil:
		if o.calls++; o.calls == fuzzCalls {
			close(o.called)
		}
	case m.Method != nil && *m.Method == MethodCancelRequest && m.ID == nil:
	case m.Method != nil || m.ID == nil || (m.Result == nil) == (m.Error == nil):
		o.problems = append(o.problems, "neither an answer nor a call of ours: "+string(line))
	case string(m.ID) == `"zz-probe"` && !o.isProbed:
		close(o.probed)
		o.isProbed = true
	default:
		o.answers = append(o.answers, string(m.ID))
	}
}

// check compares the answers with what the input owed: an answer carries
// null or the ID of a request in the input, never one only an answer had.
func (o *fuzzOutput) check(in fuzzInput) []string {
	for _, id := range o.answers {
		if id != "null" && !in.requests[id] && !in.unreadable {
			o.problems = append(o.problems, "answered id "+id+", which no request of the input has")
		}
	}
	return o.problems
}

// FuzzRawResult: a handler's json.RawMessage result goes out compact on one
// line when it is JSON, and is answered -32603 when it is not; json.RawMessage
// params are sent compact, or refused before anything is sent.
func FuzzRawResult(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		if fuzzDepth(raw) >= maxDepth-1 {
			return
		}
		valid := json.Valid(raw)
		var compact bytes.Buffer
		if valid {
			_ = json.Compact(&compact, raw)
		}
		r, err := resultFrame([]byte("1"), json.RawMessage(raw))
		switch {
		case valid && err != nil:
			t.Fatalf("valid %q refused: %v", raw, err)
		case !valid && err == nil:
			t.Fatalf("invalid %q written: %s", raw, r.buf.Bytes())
		case err == nil:
			want := `{"jsonrpc":"2.0","id":1,"result":` + compact.String() + `}`
			if got := r.buf.String(); got != want || bytes.ContainsAny(r.buf.Bytes(), "\n\r") {
				t.Fatalf("%q written as %q, want %q", raw, got, want)
			}
			r.release()
		}
		n, err := requestFrame(nil, "m", json.RawMessage(raw))
		if (err == nil) != valid {
			t.Fatalf("params %q: encoded %v, valid %v", raw, err == nil, valid)
		}
		if err == nil {
			if got := member(n.buf.Bytes(), "params"); !bytes.Equal(got, compact.Bytes()) {
				t.Fatalf("params %q sent as %q", raw, n.buf.Bytes())
			}
			n.release()
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
		same := keyOf(a) == keyOf(b)
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
// message read whole.
func FuzzTooLargeEnvelope(f *testing.F) {
	f.Fuzz(func(t *testing.T, msg []byte, step uint8) {
		e := &MessageTooLargeError{}
		n := int(step)%13 + 1
		for i := 0; i < len(msg); i += n {
			_, _ = e.Write(msg[i:min(i+n, len(msg))])
		}
		id, isResponse := e.envelope()
		if e.Size != len(msg) {
			t.Fatalf("size %d of %d bytes", e.Size, len(msg))
		}
		if fuzzDepth(msg) >= maxDepth-1 || !json.Valid(msg) {
			return
		}
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
		if isResponse != fuzzIsAnswer(obj) {
			t.Fatalf("%q: the scan says response %v", msg, isResponse)
		}
	})
}
