package wiretest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/acpkit/acprpc"
)

// Msg is one line the peer read, parsed.
type Msg struct {
	Raw    string          // the line as written, without its "\n"
	ID     json.RawMessage // the id member's exact bytes; nil when absent
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *acprpc.Error
	Fields map[string]json.RawMessage // every top-level member
}

// IsResponse reports whether the line is an answer.
func (m Msg) IsResponse() bool { return m.Method == "" && (m.Result != nil || m.Error != nil) }

// IsNotification reports whether the line is a notification.
func (m Msg) IsNotification() bool { return m.Method != "" && m.ID == nil }

// IsRequest reports whether the line is a request.
func (m Msg) IsRequest() bool { return m.Method != "" && m.ID != nil }

// IsAnswerTo reports whether the line is the answer for id (JSON text).
func (m Msg) IsAnswerTo(id string) bool { return m.IsResponse() && string(m.ID) == id }

// IsCancelOf reports whether the line is a $/cancel_request for id (JSON
// text).
func (m Msg) IsCancelOf(id string) bool {
	return m.IsNotification() && m.Method == acprpc.MethodCancelRequest && string(m.ParamMember("requestId")) == id
}

// IsRequestOf reports whether the line is a request of method.
func (m Msg) IsRequestOf(method string) bool { return m.IsRequest() && m.Method == method }

// Code is the error code of an error answer, or 0.
func (m Msg) Code() int64 {
	if m.Error == nil {
		return 0
	}
	return m.Error.Code
}

// ParamMember returns the raw value of params.name, or nil.
func (m Msg) ParamMember(name string) json.RawMessage {
	var p map[string]json.RawMessage
	if json.Unmarshal(m.Params, &p) != nil {
		return nil
	}
	return p[name]
}

// String returns the line as the peer read it.
func (m Msg) String() string { return m.Raw }

// Parse checks that line is one JSON-RPC 2.0 message as this library must
// write it and returns it parsed.
func Parse(line string) (Msg, error) {
	m := Msg{Raw: line}
	if err := json.Unmarshal([]byte(line), &m.Fields); err != nil {
		return m, fmt.Errorf("not a JSON object: %w: %q", err, line)
	}
	if v := m.Fields["jsonrpc"]; string(v) != `"2.0"` {
		return m, fmt.Errorf(`no "jsonrpc":"2.0": %q`, line)
	}
	m.ID = m.Fields["id"]
	m.Params = m.Fields["params"]
	m.Result = m.Fields["result"]
	if v, ok := m.Fields["method"]; ok {
		if err := json.Unmarshal(v, &m.Method); err != nil || m.Method == "" {
			return m, fmt.Errorf("bad method: %q", line)
		}
	}
	if v, ok := m.Fields["error"]; ok {
		m.Error = &acprpc.Error{}
		if err := json.Unmarshal(v, m.Error); err != nil {
			return m, fmt.Errorf("bad error object: %w: %q", err, line)
		}
	}
	kinds := 0
	for _, k := range []bool{m.Method != "", m.Result != nil, m.Error != nil} {
		if k {
			kinds++
		}
	}
	if kinds != 1 {
		return m, fmt.Errorf("not exactly one of method, result, error: %q", line)
	}
	if m.IsResponse() && m.ID == nil {
		return m, fmt.Errorf("an answer without an id: %q", line)
	}
	return m, nil
}

// RequestLine is a request's line without its "\n".
func RequestLine(id, method, params string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":` + quote(method) + paramsPart(params) + `}`
}

// notificationLine is a notification's line without its "\n".
func notificationLine(method, params string) string {
	return `{"jsonrpc":"2.0","method":` + quote(method) + paramsPart(params) + `}`
}

// CancelLine is a $/cancel_request line for id (JSON text).
func CancelLine(id string) string {
	return notificationLine(acprpc.MethodCancelRequest, `{"requestId":`+id+`}`)
}

// resultLine is a success answer's line.
func resultLine(id, result string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":` + result + `}`
}

// errorLine is an error answer's line.
func errorLine(id string, code int64, message string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, id, code, quote(message))
}

func paramsPart(params string) string {
	if params == "" {
		return ""
	}
	return `,"params":` + params
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b string) bool {
	var x, y any
	da := json.NewDecoder(strings.NewReader(a))
	da.UseNumber()
	db := json.NewDecoder(strings.NewReader(b))
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}
