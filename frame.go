package acprpc

import (
	"sync"

	"github.com/acpkit/acprpc/internal/wire"
)

// frame is one outgoing message, built by wire.Frame, with what the writer
// and the Sent hook need of it. Frames are pooled: the writer returns each
// to the pool once the transport has taken its bytes.
type frame struct {
	wire.Frame
	answer bool // an answer to the peer: counts against the writer's limit
	info   frameInfo
}

// maxPooledFrame keeps a rare huge message from pinning its buffer.
const maxPooledFrame = 64 << 10

var framePool = sync.Pool{New: func() any { return &frame{} }}

func getFrame() *frame { return framePool.Get().(*frame) }

func (f *frame) release() {
	if f.Buf.Cap() > maxPooledFrame {
		return
	}
	f.Reset()
	f.answer = false
	f.info = frameInfo{}
	framePool.Put(f)
}

// requestFrame builds a request (id set) or notification line.
func requestFrame(id []byte, method string, params any) (*frame, error) {
	f := getFrame()
	f.info.kind, f.info.method = KindRequest, method
	if id == nil {
		f.info.kind = KindNotification
	}
	if err := f.Request(id, method, params); err != nil {
		f.release()
		return nil, err
	}
	return f, nil
}

// resultFrame builds a success answer.
func resultFrame(id []byte, result any) (*frame, error) {
	f := getFrame()
	f.info.kind = KindResult
	if err := f.Result(id, result); err != nil {
		f.release()
		return nil, err
	}
	return f, nil
}

// errorFrame builds an error answer; a nil id is written as null, as
// JSON-RPC requires when the request's ID could not be read.
func errorFrame(id []byte, e *Error) *frame {
	f := getFrame()
	f.info.kind, f.info.err = KindError, e
	if f.ErrorAnswer(id, e) != nil { // only Data can fail; drop it
		f.release()
		return errorFrame(id, &Error{Code: e.Code, Message: e.Message})
	}
	return f
}
