package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/acpkit/acprpc"
)

// closeWait bounds the close handshake: a peer that does not answer our
// close frame in this time has its socket closed under it.
const closeWait = time.Second

// wsTransport carries one ACP message per WebSocket text frame. Binary
// frames are read and ignored, as the protocol says. It implements
// acprpc.Transport with SetReadLimit.
//
// Close and the timers unblock a read or write stuck on the peer by closing
// the socket under it (cut): the network connection itself when the
// transport has it, else through ctx, under which every read and write then
// runs (coder/websocket closes the socket when a blocked call's context
// ends).
type wsTransport struct {
	graceful // how Server.Shutdown ends it, on a server's side

	ws    *websocket.Conn
	raw   atomic.Pointer[net.Conn] // the socket under ws, when known: closing it unblocks everything
	batch batcher                  // the connection under ws, when it can gather frames (a server's wsConn), else nil
	// flushes: Flush has been called, so the caller flushes after its
	// sends (a Conn does; a handler that uses the transport itself may
	// not), and Send may gather.
	flushes atomic.Bool
	ctx     context.Context
	cancel  context.CancelFunc
	limit   atomic.Int64 // the longest message kept, in bytes

	// awaitInit is set on a server's side: the first message must be an
	// initialize request (answers before it are dropped, anything else
	// closes the connection).
	awaitInit bool

	silence   *timing               // armed while Recv waits: how long the peer may send nothing
	stall     *timing               // armed while Send blocks: how long the peer may not read
	pinger    *pinger               // nil when the peer is not pinged
	sending   atomic.Bool           // a Send is writing
	reading   atomic.Bool           // a Recv is reading, under ctx
	reason    atomic.Pointer[error] // why the transport failed, when it was us
	closeOnce sync.Once
	onClose   func() // called once, when the transport closes

	// attachMu orders attach against Close: a server's transport exists
	// (and counts as open) before its socket does, and a Close in between
	// leaves the socket, once it comes, to be closed by attach.
	attachMu    sync.Mutex
	closedEarly bool // Close ran before attach: there was no socket to close
}

// wsConfig is what differs between the sides and the servers.
type wsConfig struct {
	maxMessage   int           // the read limit until SetReadLimit; 0 means acprpc.DefaultMaxMessageSize
	idleTimeout  time.Duration // close when the peer sends nothing, pongs included, this long; 0 never
	writeTimeout time.Duration // close when a message cannot be written in this time; 0 never
	awaitInit    bool
	onClose      func()
}

// newWSTransport wraps an open WebSocket; t.pong must be installed as the
// socket's OnPongReceived, which is why the caller builds t first with
// prepareWS and opens the socket second.
func prepareWS(cfg wsConfig) *wsTransport {
	t := &wsTransport{awaitInit: cfg.awaitInit, onClose: cfg.onClose}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	max := cfg.maxMessage
	if max <= 0 {
		max = acprpc.DefaultMaxMessageSize
	}
	t.limit.Store(int64(max))
	if d := cfg.idleTimeout; d > 0 {
		t.silence = newTiming(d, func() { t.fail(fmt.Errorf("remote: the peer sent nothing for %v", d)) })
		t.pinger = newPinger(d/4, t.ping)
	}
	if d := cfg.writeTimeout; d > 0 {
		t.stall = newTiming(d, func() { t.fail(fmt.Errorf("remote: the peer read nothing for %v", d)) })
	}
	return t
}

// attach hands t its socket, once opened, and the network connection
// under it when known. It reports false when t was closed before its
// socket came; the socket is then closed at once, and t must not be used.
func (t *wsTransport) attach(ws *websocket.Conn, raw net.Conn) bool {
	t.attachMu.Lock()
	if t.closedEarly {
		t.attachMu.Unlock()
		_ = ws.CloseNow()
		if raw != nil {
			_ = raw.Close()
		}
		return false
	}
	t.ws = ws
	if raw != nil {
		t.raw.Store(&raw)
	}
	t.attachMu.Unlock()
	ws.SetReadLimit(-1) // Recv enforces the limit, dropping a message instead of the connection
	t.pinger.start()
	return true
}

// closing reports whether Close has begun.
func (t *wsTransport) closing() bool { return t.ctx.Err() != nil }

// pong is the socket's OnPongReceived: an answer to our ping is a sign of
// life like any message.
func (t *wsTransport) pong(context.Context, []byte) { t.silence.restart() }

// SetReadLimit sets the longest message Recv returns; a longer one is
// dropped and reported as a *acprpc.MessageTooLargeError.
func (t *wsTransport) SetReadLimit(n int) {
	if n > 0 {
		t.limit.Store(int64(n))
	}
}

// Recv returns the next text message. It returns io.EOF when the peer
// closed the connection normally; every error says the peer is gone
// (peerGone).
func (t *wsTransport) Recv() ([]byte, error) {
	t.reading.Store(true)
	defer t.reading.Store(false)
	t.silence.arm()
	defer t.silence.disarm()
	for {
		typ, r, err := t.ws.Reader(t.opContext())
		if err != nil {
			return nil, t.readError(err)
		}
		if typ != websocket.MessageText {
			if _, err := io.Copy(io.Discard, r); err != nil {
				return nil, t.readError(err)
			}
			continue
		}
		msg, err := t.readMessage(r)
		if err != nil {
			var tooLarge *acprpc.MessageTooLargeError
			if !errors.As(err, &tooLarge) {
				return nil, t.readError(err)
			}
		}
		if t.awaitInit && err == nil {
			if skip, initErr := t.checkFirst(msg); initErr != nil {
				return nil, initErr
			} else if skip {
				continue
			}
		}
		return msg, err
	}
}

// readMessage reads one message whole, up to the limit. A longer one is
// read to its end without being kept, but for its first bytes.
func (t *wsTransport) readMessage(r io.Reader) ([]byte, error) {
	limit := int(t.limit.Load())
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), limit+1)])
		buf = buf[:len(buf)+n]
		if n > 0 {
			t.silence.restart()
		}
		switch {
		case len(buf) > limit:
			return nil, t.dropRest(r, buf, limit, err)
		case err == io.EOF:
			return buf, nil
		case err != nil:
			return nil, err
		}
	}
}

// dropRest reads the rest of a message over the limit through a small
// window, through the MessageTooLargeError that keeps its first bytes and
// finds its ID wherever it is.
func (t *wsTransport) dropRest(r io.Reader, seen []byte, limit int, err error) error {
	tooLarge := &acprpc.MessageTooLargeError{Limit: limit}
	_, _ = tooLarge.Write(seen)
	window := make([]byte, 32<<10)
	for err == nil {
		var n int
		n, err = r.Read(window)
		_, _ = tooLarge.Write(window[:n])
		if n > 0 {
			t.silence.restart()
		}
	}
	if err != io.EOF {
		return err
	}
	return tooLarge
}

// checkFirst applies the rule that a connection starts with initialize:
// it reports whether msg is to be dropped, or an error that has closed the
// connection.
func (t *wsTransport) checkFirst(msg []byte) (skip bool, err error) {
	env := peek(msg)
	switch {
	case env.isResponse():
		return true, nil
	case env.isRequest() && env.methodName() == methodInitialize:
		t.awaitInit = false
		return false, nil
	}
	t.closeBounded(websocket.StatusProtocolError, "the first message must be initialize")
	return false, peerGone{errors.New("remote: the first message was not initialize")}
}

// batcher is a connection that gathers what is written between hold and
// release, and writes it out together (wsConn).
type batcher interface {
	hold()
	release() error
}

// Send writes msg as one text message. On a connection that gathers
// frames, once its caller has shown that it flushes (Flush is optional to
// a Transport's user), the message leaves with the next Flush (the Conn's,
// once its write queue runs dry) or once a batch's worth is gathered:
// messages written back to back share a system call. Before, it leaves at
// once.
func (t *wsTransport) Send(msg []byte) error {
	if t.batch != nil && t.flushes.Load() {
		t.batch.hold()
	}
	return t.writing(func() error { return t.ws.Write(t.opContext(), websocket.MessageText, msg) })
}

// Flush writes out what Send gathered.
func (t *wsTransport) Flush() error {
	if t.batch == nil {
		return nil
	}
	t.flushes.Store(true)
	return t.writing(t.batch.release)
}

// writing runs write, a write that may wait for the peer to read, under
// WriteTimeout, and says why it failed.
func (t *wsTransport) writing(write func() error) error {
	t.sending.Store(true)
	t.stall.arm()
	err := write()
	t.stall.disarm()
	t.sending.Store(false)
	if err != nil {
		if r := t.reason.Load(); r != nil {
			return *r
		}
		return fmt.Errorf("remote: websocket write: %w", err)
	}
	return nil
}

// Close ends the connection with a normal close frame and waits for the
// peer's, at most closeWait: then the socket is closed under the handshake.
// Without a way to do that (the socket unknown and no read whose context
// can be cancelled), or with a write stuck or the transport failed, it
// closes the socket at once. Before the socket is attached, it only marks
// t closed, and attach closes the socket. It always returns nil: a close
// that fails means the peer is gone already.
func (t *wsTransport) Close() error {
	t.closeOnce.Do(func() {
		t.pinger.stop()
		t.attachMu.Lock()
		attached := t.ws != nil
		t.closedEarly = !attached
		t.attachMu.Unlock()
		canCut := t.raw.Load() != nil || t.reading.Load()
		switch {
		case !attached: // attach closes the socket when it comes
		case canCut && !t.sending.Load() && t.reason.Load() == nil:
			t.closeBounded(websocket.StatusNormalClosure, "")
		default:
			t.cut()
		}
		t.cancel()
		t.silence.disarm()
		t.stall.disarm()
		if t.onClose != nil {
			t.onClose()
		}
	})
	return nil
}

// closeBounded runs the close handshake, cutting the socket if the peer
// has not answered it within closeWait.
func (t *wsTransport) closeBounded(code websocket.StatusCode, reason string) {
	unstick := time.AfterFunc(closeWait, t.cut)
	_ = t.ws.Close(code, reason)
	unstick.Stop()
}

// cut closes the socket at once, without a close frame.
func (t *wsTransport) cut() {
	t.cancel() // a read or write under ctx closes the socket
	if c := t.raw.Load(); c != nil {
		_ = (*c).Close()
	}
	_ = t.ws.CloseNow()
}

// opContext is the context of a read or a write. With the socket at hand,
// cut closes it under a blocked call, so the call needs no context of its
// own (which would cost coder/websocket a context.AfterFunc per message);
// without it, ctx is what cut cancels to the same end.
func (t *wsTransport) opContext() context.Context {
	if t.raw.Load() != nil {
		return context.Background()
	}
	return t.ctx
}

// fail ends the transport for a reason of ours (a timeout), which later
// reads and writes return.
func (t *wsTransport) fail(reason error) {
	if t.reason.CompareAndSwap(nil, &reason) {
		t.cut() // a blocked read or write returns
	}
}

// readError turns a failed read into what Recv returns: io.EOF for a
// normal close (a close frame without a status is what a browser's
// close() sends), our own reason when we failed the transport, else the
// error itself; always a peerGone, as the socket can carry nothing more.
func (t *wsTransport) readError(err error) error {
	if r := t.reason.Load(); r != nil {
		return peerGone{*r}
	}
	switch websocket.CloseStatus(err) {
	case websocket.StatusNormalClosure, websocket.StatusGoingAway, websocket.StatusNoStatusRcvd:
		return peerGone{io.EOF}
	}
	return peerGone{fmt.Errorf("remote: websocket read: %w", err)}
}

// ping sends the peer a ping, which it answers with a pong that Recv reads
// and counts as a sign of life. It runs on the pinger's timer goroutine.
func (t *wsTransport) ping(ctx context.Context) {
	_ = t.ws.Ping(ctx) // no pong in time is for the silence timer to judge
}

var _ acprpc.Transport = (*wsTransport)(nil)
