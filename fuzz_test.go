package acprpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpkit/acprpc/internal/wire/wirefuzz"
)

// FuzzStream drives a whole connection; the targets of the parser itself
// are in internal/wire. Its seeds are in testdata/fuzz and run with every
// go test.

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
		if wirefuzz.Depth(line) >= fuzzMaxDepth-1 || json.Unmarshal(line, &obj) != nil || obj == nil {
			in.unreadable = in.unreadable || limit > 0 && len(line) > limit
			continue
		}
		id, ok := obj["id"]
		switch {
		case !ok:
		case wirefuzz.IsAnswer(obj):
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

// fuzzMaxDepth is the parser's bound on nesting; lines near it are left
// out of the checks, where encoding/json and the parser may differ by one.
const fuzzMaxDepth = 10000
