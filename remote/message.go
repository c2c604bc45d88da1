package remote

import (
	"bytes"
	"encoding/json"

	"github.com/acpkit/acprpc"
)

// The methods the transports look at.
const (
	methodInitialize  = "initialize"
	methodSessionLoad = "session/load"
)

// envelope is what a transport needs to know of a message to carry it: its
// kind, the key of the ID its answer carries, and the session it belongs to.
// It is read by acprpc.ReadEnvelope, the Conn's own reading, so that the
// transports and the Conn agree on what is an answer and which ID it names.
// Everything else is the Conn's to validate; a message the Conn cannot use
// is carried as a connection-level one and the Conn answers it.
type envelope struct {
	acprpc.Envelope
	msg []byte
}

// peek reads msg's envelope.
func peek(msg []byte) envelope { return envelope{acprpc.ReadEnvelope(msg), msg} }

func (e envelope) isRequest() bool    { return e.Kind == acprpc.KindRequest }
func (e envelope) isResponse() bool   { return e.Kind == acprpc.KindResult || e.Kind == acprpc.KindError }
func (e envelope) methodName() string { return e.Method }

// answerID is the ID that the Conn's answer to this message will carry: a
// request's, or that of a message the Conn refuses but whose ID it can
// read. A message answered with "id": null, or never answered, has none.
func (e envelope) answerID() acprpc.ID {
	if e.Kind != acprpc.KindRequest && e.Kind != acprpc.KindInvalid {
		return acprpc.ID{}
	}
	return e.ID
}

// answerKey is the key of answerID, if there is one.
func (e envelope) answerKey() (acprpc.IDKey, bool) { return keyOf(e.answerID()) }

// answeredKey is the key of the ID an answer names, if it names one.
func (e envelope) answeredKey() (acprpc.IDKey, bool) {
	if !e.isResponse() {
		return acprpc.IDKey{}, false
	}
	return keyOf(e.ID)
}

// keyOf is id's key, and whether id is one: the zero key is no ID's.
func keyOf(id acprpc.ID) (acprpc.IDKey, bool) {
	k := id.Key()
	return k, k != acprpc.IDKey{}
}

// sessionID is params.sessionId when it is a string, else "".
func (e envelope) sessionID() string { return e.SessionID }

// resultSessionID is result.sessionId when it is a string, else "": the
// answer to session/new names the new session there. It decodes the
// message, which only the answers to a client's own calls need.
func (e envelope) resultSessionID() string {
	var answer struct {
		Result struct {
			SessionID json.RawMessage `json:"sessionId"`
		} `json:"result"`
	}
	var sid string
	if json.Unmarshal(e.msg, &answer) != nil || json.Unmarshal(answer.Result.SessionID, &sid) != nil {
		return ""
	}
	return sid
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
