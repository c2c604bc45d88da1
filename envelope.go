package acprpc

import "github.com/acpkit/acprpc/internal/wire"

// An Envelope is what a transport needs to know of a message to carry it:
// what it is, which request it belongs to, and which session. A transport
// that routes messages (each session's to its own stream, an answer back
// to where its request came from) reads it with ReadEnvelope, the Conn's
// own reading of a message, so that the two agree on what is an answer
// and which request it names.
type Envelope struct {
	// Kind is what the message is: KindInvalid for one a Conn refuses (not
	// JSON, not a JSON-RPC message, an ID it cannot carry), which it
	// answers with -32700 or -32600.
	Kind MessageKind
	// ID is the ID of a request, the ID an answer names, or, for an invalid
	// message, the ID the Conn's refusal carries. It is zero for a
	// notification, and for what names no ID a Conn can carry: an error
	// answer with "id": null, a refusal answered with "id": null.
	ID ID
	// Method is the method of a request or notification.
	Method string
	// SessionID is params.sessionId when it is a string: the ACP session a
	// request or notification belongs to.
	SessionID string
}

// ReadEnvelope reads msg's Envelope as a Conn reads the message: it checks
// the whole of msg and decodes neither params nor result.
func ReadEnvelope(msg []byte) Envelope {
	r := acpReader()
	m, bad := r.Read(msg)
	if bad != nil {
		return Envelope{Kind: KindInvalid, ID: ID{raw: string(bad.ID)}}
	}
	return Envelope{Kind: kindOf(&m), ID: ID{raw: string(m.ID)}, Method: m.Method, SessionID: m.Scope}
}

// kindOf is the MessageKind of a message that parsed.
func kindOf(m *message) MessageKind {
	switch {
	case m.Kind == wire.Request:
		return KindRequest
	case m.Kind == wire.Notification:
		return KindNotification
	case m.Error != nil:
		return KindError
	}
	return KindResult
}
