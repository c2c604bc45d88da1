package sourcegraph

import (
	"encoding/json"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/acpkit/acprpc"
)

// Transport makes any of sourcegraph/jsonrpc2's object streams an
// acprpc.Transport, for acprpc's own Conn: the engine's codecs
// (VSCodeObjectCodec's Content-Length framing, as LSP uses, or
// PlainObjectCodec's bare JSON values) over any byte stream, and its
// websocket package's stream over a WebSocket. Each object is taken as raw
// JSON, never decoded into the engine's own types, so IDs and params reach
// the Conn exactly as the peer wrote them.
func Transport(s jsonrpc2.ObjectStream) acprpc.Transport {
	return objectTransport{s}
}

type objectTransport struct{ s jsonrpc2.ObjectStream }

func (o objectTransport) Recv() ([]byte, error) {
	var raw json.RawMessage
	if err := o.s.ReadObject(&raw); err != nil {
		return nil, err
	}
	return raw, nil
}

func (o objectTransport) Send(msg []byte) error { return o.s.WriteObject(json.RawMessage(msg)) }

func (o objectTransport) Close() error { return o.s.Close() }
