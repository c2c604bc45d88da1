package remote

import (
	"bytes"

	"github.com/acpkit/acprpc/internal/wire"
)

// The methods the transports look at.
const (
	methodInitialize  = "initialize"
	methodSessionLoad = "session/load"
)

// envelope is what a transport needs to know of a message to carry it: its
// kind, the key of the ID its answer carries, and the session it belongs to.
// It is read by wire.Parse, the Conn's own reading, so that the transports
// and the Conn agree on what is an answer and which ID it names. Everything
// else is the Conn's to validate; a message the Conn cannot use is carried
// as a connection-level one and the Conn answers it.
type envelope struct {
	msg     wire.Message
	problem *wire.Problem // why the Conn will refuse the message, or nil
}

// peek reads msg's envelope.
func peek(msg []byte) envelope {
	m, bad := wire.Parse(msg)
	return envelope{msg: m, problem: bad}
}

func (e envelope) isRequest() bool    { return e.problem == nil && e.msg.Kind == wire.Request }
func (e envelope) isResponse() bool   { return e.problem == nil && e.msg.Kind == wire.Response }
func (e envelope) methodName() string { return e.msg.Method }

// answerID is the raw ID that the Conn's answer to this message will
// carry: a request's, or that of a message the Conn refuses but whose ID it
// can read. A message answered with "id": null, or never answered, has
// none.
func (e envelope) answerID() []byte {
	switch {
	case e.problem != nil:
		return e.problem.ID
	case e.msg.Kind == wire.Request:
		return e.msg.ID
	}
	return nil
}

// answerKey is the key of answerID, if there is one.
func (e envelope) answerKey() (wire.Key, bool) { return wire.KeyOf(e.answerID()) }

// answeredKey is the key of the ID an answer names, if it names one.
func (e envelope) answeredKey() (wire.Key, bool) {
	if !e.isResponse() {
		return wire.Key{}, false
	}
	return wire.KeyOf(e.msg.ID)
}

// sessionID is params.sessionId when it is a string, else "".
func (e envelope) sessionID() string { return e.msg.SessionID }

// resultSessionID is result.sessionId when it is a string, else "": the
// answer to session/new names the new session there.
func (e envelope) resultSessionID() string {
	if sid := wire.Member(e.msg.Result, "sessionId"); len(sid) > 0 && sid[0] == '"' {
		return wire.Unquote(sid)
	}
	return ""
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
