package remote

import (
	"bytes"
	"encoding/json"
)

// The methods the transports look at.
const (
	methodInitialize  = "initialize"
	methodSessionLoad = "session/load"
)

// envelope is what a transport needs to know of a message to carry it: its
// kind, its ID as sent, and the session it belongs to. Everything else is
// the Conn's to validate; a message the envelope cannot make sense of is
// carried as a connection-level one and the Conn answers it.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method json.RawMessage `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	method string
}

// peek reads msg's envelope; the zero envelope stands for anything that is
// not a JSON object.
func peek(msg []byte) envelope {
	var e envelope
	if json.Unmarshal(msg, &e) != nil {
		return envelope{}
	}
	_ = json.Unmarshal(e.Method, &e.method)
	return e
}

func (e envelope) hasID() bool     { return e.ID != nil }
func (e envelope) isRequest() bool { return e.Method != nil && e.hasID() }
func (e envelope) isResponse() bool {
	return e.Method == nil && (e.hasID() || e.Result != nil || e.Error != nil)
}
func (e envelope) idKey() string      { return string(e.ID) }
func (e envelope) methodName() string { return e.method }

// sessionID is params.sessionId when it is a string, else "".
func (e envelope) sessionID() string { return sessionIn(e.Params) }

// resultSessionID is result.sessionId when it is a string, else "": the
// answer to session/new names the new session there.
func (e envelope) resultSessionID() string { return sessionIn(e.Result) }

func sessionIn(obj json.RawMessage) string {
	if len(obj) == 0 || obj[0] != '{' {
		return ""
	}
	var s struct {
		SessionID json.RawMessage `json:"sessionId"`
	}
	if json.Unmarshal(obj, &s) != nil || len(s.SessionID) == 0 || s.SessionID[0] != '"' {
		return ""
	}
	var id string
	_ = json.Unmarshal(s.SessionID, &id)
	return id
}

// jsonKind is the first significant byte of a JSON text: '{' for an
// object, '[' for a batch, 0 for nothing.
func jsonKind(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}
