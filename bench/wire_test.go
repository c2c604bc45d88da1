package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"reflect"
	"testing"
	"time"
)

// TestWireShapes checks that every peer puts the same payloads on the wire:
// the client's session/prompt params, the agent's answer and its
// session/update params are compared, as JSON values, with the workload's
// reference shapes. Key order and the request ID may differ.
func TestWireShapes(t *testing.T) {
	wantParams := decode(t, `{"sessionId":"s1","prompt":[{"type":"text","text":"hello"}]}`)
	wantResult := decode(t, `{"stopReason":"end_turn"}`)
	wantUpdate := decode(t, `{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}`)
	for _, p := range Peers() {
		t.Run(p.Name(), func(t *testing.T) {
			// Client: capture the request line it writes.
			inR, inW, _ := os.Pipe()
			outR, outW, _ := os.Pipe()
			c := p.Dial(outR, inW, new(Counter))
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			go func() { _, _ = c.Prompt(ctx, "s1", TextHello) }()
			var req struct {
				JSONRPC string          `json:"jsonrpc"`
				Method  string          `json:"method"`
				Params  json.RawMessage `json:"params"`
			}
			line := readOneLine(t, inR)
			if err := json.Unmarshal(line, &req); err != nil {
				t.Fatalf("client wrote %q: %v", line, err)
			}
			if req.JSONRPC != "2.0" || req.Method != MethodPrompt || !reflect.DeepEqual(decode(t, string(req.Params)), wantParams) {
				t.Errorf("client request %s", line)
			}
			cancel()
			c.Close()
			for _, f := range []*os.File{inR, inW, outR, outW} {
				f.Close()
			}

			// Agent: feed a flood of one and capture what comes back.
			inR, inW, _ = os.Pipe()
			outR, outW, _ = os.Pipe()
			s := p.Serve(inR, outW, &Workload{})
			if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"flood 1"}]}}`+"\n"); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(outR)
			var upd struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			line = readLineFrom(t, br)
			if err := json.Unmarshal(line, &upd); err != nil || upd.Method != MethodUpdate || !reflect.DeepEqual(decode(t, string(upd.Params)), wantUpdate) {
				t.Errorf("agent update %s", line)
			}
			if p.Name() != "echo" { // the floor echoes the request instead of answering
				var resp struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      json.RawMessage `json:"id"`
					Result  json.RawMessage `json:"result"`
				}
				line = readLineFrom(t, br)
				if err := json.Unmarshal(line, &resp); err != nil || resp.JSONRPC != "2.0" || string(resp.ID) != "1" || !reflect.DeepEqual(decode(t, string(resp.Result)), wantResult) {
					t.Errorf("agent answer %s", line)
				}
			}
			s.Close()
			for _, f := range []*os.File{inR, inW, outR, outW} {
				f.Close()
			}
		})
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

func readOneLine(t *testing.T, r io.Reader) []byte {
	t.Helper()
	return readLineFrom(t, bufio.NewReader(r))
}

func readLineFrom(t *testing.T, br *bufio.Reader) []byte {
	t.Helper()
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		b, err := br.ReadBytes('\n')
		ch <- res{b, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("read: %v", r.err)
		}
		return r.b
	case <-time.After(5 * time.Second):
		t.Fatal("no line within 5 s")
		return nil
	}
}
