package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv2"
)

// The two directions of the wire.
const (
	toAgent   = "to_agent"
	fromAgent = "from_agent"
)

// Line is one message on the wire, exactly as sent, with when and which way.
type Line struct {
	Seq int     `json:"seq"`
	Ms  float64 `json:"t_ms"` // since the agent started
	Dir string  `json:"dir"`
	Raw string  `json:"raw"`
	// Base64 holds a line that is not UTF-8, which Raw could not keep byte
	// for byte (JSON would turn each bad byte into U+FFFD); Raw is empty
	// then. The proxy's record and run's -json report both write it so.
	Base64 []byte `json:"raw_base64,omitempty"`
	// Size is, for a line longer than acpcheck keeps, its length: Raw (or
	// Base64) holds only its first bytes. Zero for a line kept whole.
	Size int `json:"truncated_from,omitempty"`

	msg parsed
}

// setRaw keeps raw, the line as it was on the wire, byte for byte.
func (l *Line) setRaw(raw []byte) {
	if utf8.Valid(raw) {
		l.Raw, l.Base64 = string(raw), nil
		return
	}
	l.Raw, l.Base64 = "", bytes.Clone(raw)
}

// parsed is what a line says as JSON-RPC; every member is empty for a line
// that is not a JSON object.
type parsed struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *acprpc.Error   `json:"error"`
}

func parse(raw []byte) parsed {
	var p parsed
	if json.Unmarshal(raw, &p) == nil {
		return p
	}
	// An answer whose error is not JSON-RPC's shape (a code that is a
	// string) is still an answer: answer-envelope says what is wrong with it.
	var loose struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &loose) != nil || loose.Method != nil || loose.Error == nil {
		return parsed{}
	}
	return parsed{ID: loose.ID, Result: loose.Result, Error: &acprpc.Error{Message: string(loose.Error)}}
}

// hasID reports whether the message carries an ID other than null.
func (p parsed) hasID() bool { return len(p.ID) > 0 && string(p.ID) != "null" }

func (p parsed) isRequest() bool      { return p.Method != "" && p.hasID() }
func (p parsed) isNotification() bool { return p.Method != "" && !p.hasID() }
func (p parsed) isAnswer() bool       { return p.Method == "" && (p.Result != nil || p.Error != nil) }

// answers reports whether p is an answer to the request whose ID is id.
func (p parsed) answers(id json.RawMessage) bool { return p.isAnswer() && bytes.Equal(p.ID, id) }

// param returns one member of the params, as JSON.
func (p parsed) param(name string) json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(p.Params, &m)
	return m[name]
}

// sessionID is the params' sessionId, if any.
func (p parsed) sessionID() string {
	var s string
	_ = json.Unmarshal(p.param("sessionId"), &s)
	return s
}

// stopReason is a result's stopReason, if any.
func (p parsed) stopReason() string {
	var r struct {
		StopReason string `json:"stopReason"`
	}
	_ = json.Unmarshal(p.Result, &r)
	return r.StopReason
}

// updateKind is a session/update's kind (agent_message_chunk, ...).
func (p parsed) updateKind() string {
	var u struct {
		SessionUpdate string `json:"sessionUpdate"`
	}
	_ = json.Unmarshal(p.param("update"), &u)
	return u.SessionUpdate
}

// updateMember is a string member of a session/update's update, such as a
// state_update's state.
func (p parsed) updateMember(name string) string {
	var v string
	_ = json.Unmarshal(p.updateMembers()[name], &v)
	return v
}

// updateMembers is a session/update's update, member by member.
func (p parsed) updateMembers() map[string]json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(p.param("update"), &m)
	return m
}

// resultMember is a string member of a result.
func (p parsed) resultMember(name string) string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(p.Result, &m)
	var v string
	_ = json.Unmarshal(m[name], &v)
	return v
}

// answerText describes an answer briefly: its stopReason, or its error.
func answerText(l Line) string {
	if l.msg.Error != nil {
		return fmt.Sprintf("with error %d %q", l.msg.Error.Code, l.msg.Error.Message)
	}
	if s := l.msg.stopReason(); s != "" {
		return fmt.Sprintf("stopReason %q", s)
	}
	return "with " + string(l.msg.Result)
}

func orResult(err error) string {
	if err == nil {
		return "with a result"
	}
	return err.Error()
}

// isIdleUpdate reports whether p is an idle state_update, which ends a v2
// work.
func isIdleUpdate(p parsed) bool {
	return p.Method == acpv2.MethodSessionUpdate && p.updateKind() == "state_update" && p.updateMember("state") == "idle"
}

func jsonInto(b []byte, v any) bool { return json.Unmarshal(b, v) == nil }

// bytes is the line as it was on the wire.
func (l Line) bytes() []byte {
	if l.Base64 != nil {
		return l.Base64
	}
	return []byte(l.Raw)
}
