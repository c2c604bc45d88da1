package acprpc

import (
	"encoding/json"

	"github.com/sourcegraph/jsonrpc2"
)

// ObjectStream makes any of sourcegraph/jsonrpc2's object streams a
// Transport: its codecs (VSCodeObjectCodec's Content-Length framing, as LSP
// uses, or PlainObjectCodec's bare JSON values) over any byte stream, and its
// websocket package's stream over a WebSocket. Each object is taken as raw
// JSON, never decoded into the engine's own types, so IDs and params reach
// the Conn exactly as the peer wrote them.
func ObjectStream(s jsonrpc2.ObjectStream) Transport {
	return objectStream{s}
}

type objectStream struct{ s jsonrpc2.ObjectStream }

func (o objectStream) Recv() ([]byte, error) {
	var raw json.RawMessage
	if err := o.s.ReadObject(&raw); err != nil {
		return nil, err
	}
	return raw, nil
}

func (o objectStream) Send(msg []byte) error { return o.s.WriteObject(json.RawMessage(msg)) }

func (o objectStream) Close() error { return o.s.Close() }
