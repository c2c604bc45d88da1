package interop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpkit/acprpc/internal/interoptest"
)

// sdkVersion is the TypeScript SDK the scripts are written against, as
// package.json pins it.
var sdkVersion = interoptest.NodePackages["@agentclientprotocol/sdk"]

// requireNode returns the node binary once Node.js and the pinned packages
// are installed here; see interoptest.RequireNode.
func requireNode(t *testing.T) string {
	t.Helper()
	return interoptest.RequireNode(t, interopDir)
}

// nodeScript returns the arguments that run one of src/*.ts with tsx.
func nodeScript(script string, args ...string) []string {
	return append([]string{"--import", "tsx", filepath.Join("src", script)}, args...)
}

// syncBuffer is a bytes.Buffer safe for a process's output and a test.
type syncBuffer = interoptest.SyncBuffer

// wireEntry is one message of a script's wire log.
type wireEntry struct {
	Seq int             `json:"seq"`
	T   float64         `json:"t"`
	Dir string          `json:"dir"` // "in": read by the script; "out": written by it
	Msg json.RawMessage `json:"msg"`
}

// wireMsg is a wire message's members, IDs kept as their exact JSON text.
type wireMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

func (e wireEntry) parsed() wireMsg {
	var m wireMsg
	_ = json.Unmarshal(e.Msg, &m)
	return m
}

func (m wireMsg) isResponse() bool     { return m.Method == "" && m.ID != nil }
func (m wireMsg) isNotification() bool { return m.Method != "" && m.ID == nil }

// cancelledID is the requestId of a $/cancel_request, or "".
func (m wireMsg) cancelledID() string {
	if m.Method != "$/cancel_request" || m.ID != nil {
		return ""
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	_ = json.Unmarshal(m.Params, &p)
	return string(p.RequestID)
}

// sessionOf is params.sessionId, or "".
func (m wireMsg) sessionOf() string {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(m.Params, &p)
	return p.SessionID
}

// rpcError is a JSON-RPC error as the scripts report it.
type rpcError struct {
	Name    string          `json:"name"`
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// wireLog is a script's wire log with the queries the tests make.
type wireLog []wireEntry

// responses returns the responses that went dir with the given ID.
func (w wireLog) responses(dir, id string) []wireEntry {
	var out []wireEntry
	for _, e := range w {
		if m := e.parsed(); e.Dir == dir && m.isResponse() && string(m.ID) == id {
			out = append(out, e)
		}
	}
	return out
}

// cancels returns the IDs named by the $/cancel_request notifications that
// went dir, in order.
func (w wireLog) cancels(dir string) []string {
	var out []string
	for _, e := range w {
		if id := e.parsed().cancelledID(); e.Dir == dir && id != "" {
			out = append(out, id)
		}
	}
	return out
}

// notifications returns the notifications of method that went dir.
func (w wireLog) notifications(dir, method string) []wireEntry {
	var out []wireEntry
	for _, e := range w {
		if m := e.parsed(); e.Dir == dir && m.isNotification() && m.Method == method {
			out = append(out, e)
		}
	}
	return out
}

// String prints the log one message a line, for a failing test.
func (w wireLog) String() string {
	var b strings.Builder
	for _, e := range w {
		fmt.Fprintf(&b, "  #%-3d %8.1fms %-3s %s\n", e.Seq, e.T, e.Dir, e.Msg)
	}
	return b.String()
}

// readReport decodes a script's one-line JSON report.
func readReport(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("the report is empty")
	}
	return json.Unmarshal(data, v)
}

// withoutWire returns a report's JSON, indented, without its wire log, which
// is printed apart.
func withoutWire(raw []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return string(raw)
	}
	delete(m, "wire")
	out, err := json.MarshalIndent(m, "  ", "  ")
	if err != nil {
		return string(raw)
	}
	return string(out)
}
