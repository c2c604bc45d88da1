package sourcegraph

import (
	"encoding/json"
	"errors"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/acpkit/acprpc"
)

// Stream wraps the connection's stream, which the Layer then writes through
// too: of the answers to a request, the first goes out and the rest are
// dropped, and an error answer to a cancelled request becomes its
// cancellation marker or -32800. Requests and notifications pass as they
// are. Call it once, before the connection starts.
func (l *Layer) Stream(s jsonrpc2.ObjectStream) jsonrpc2.ObjectStream {
	l.stream = s
	return layerStream{l}
}

type layerStream struct{ l *Layer }

// ReadObject reads the next message. When the read fails, the engine
// closes the connection and refuses every reply from then on: the requests
// read before are answered first (Layer.inputEnded).
func (s layerStream) ReadObject(v any) error {
	err := s.l.stream.ReadObject(v)
	if err != nil {
		s.l.inputEnded(err)
	}
	return err
}

// Close is the engine closing the connection: the Layer's wait for the
// answers of the requests read before the end of input is over.
func (s layerStream) Close() error {
	s.l.closeOnce.Do(func() { close(s.l.closed) })
	return s.l.stream.Close()
}

// WriteObject sees each message the engine writes, encoded as the engine
// encodes it.
func (s layerStream) WriteObject(obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	id, code, isAnswer := answerOf(b)
	if !isAnswer {
		return s.l.writeRaw(b)
	}
	r, cause := s.l.claimWritten(id)
	if r == nil {
		s.l.log.Debug("sourcegraph: dropping an answer to a request answered already", "id", id.String())
		return nil
	}
	defer close(r.sent)
	switch {
	case code != nil && (cause != nil || *code == acprpc.CodeRequestCancelled):
		return s.l.write(s.l.cancelledAnswer(r.id, r.method))
	case code != nil && *code == 0:
		return s.l.write(withCode(b, acprpc.CodeInternalError))
	}
	return s.l.writeRaw(b)
}

// answerOf reads the ID and the error code (nil for a result) of an
// answer, and reports whether b is one.
func answerOf(b []byte) (id jsonrpc2.ID, code *int64, ok bool) {
	var m struct {
		ID     *jsonrpc2.ID `json:"id"`
		Method *string      `json:"method"`
		Error  *struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &m) != nil || m.Method != nil || m.ID == nil {
		return jsonrpc2.ID{}, nil, false
	}
	if m.Error != nil {
		code = &m.Error.Code
	}
	return *m.ID, code, true
}

// withCode is the error answer b with its code replaced: no answer may
// carry code 0, which jsonrpc2.HandlerWithError gives every error that is
// not a *jsonrpc2.Error.
func withCode(b []byte, code int64) *jsonrpc2.Response {
	var resp jsonrpc2.Response
	_ = json.Unmarshal(b, &resp) // b is the engine's own encoding of a Response
	resp.Error.Code = code
	return &resp
}

// send writes the answer the Layer built for r, whose answer it claimed.
func (l *Layer) send(r *request, resp *jsonrpc2.Response) {
	defer close(r.sent)
	if err := l.write(resp); err != nil {
		l.log.Debug("sourcegraph: answer not sent", "id", resp.ID.String(), "error", err.Error())
	}
}

// write encodes and sends one message of the Layer's own.
func (l *Layer) write(resp *jsonrpc2.Response) error {
	b, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	return l.writeRaw(b)
}

// writeRaw sends one encoded message, one writer at a time.
func (l *Layer) writeRaw(b []byte) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.stream == nil {
		l.log.Error(errNoStream.Error())
		return errNoStream
	}
	return l.stream.WriteObject(json.RawMessage(b))
}

// errNoStream is the failure of a Layer whose Handler serves a connection
// whose stream is not the Layer's: it cannot see, so cannot guard, the
// answers.
var errNoStream = errors.New("sourcegraph: the connection's stream is not the Layer's (Layer.Stream); answers cannot be sent")
