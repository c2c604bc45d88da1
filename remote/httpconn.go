package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpkit/acprpc"
)

// httpConn is the server's side of one Streamable HTTP connection, and the
// acprpc.Transport its Conn runs over. The client's messages arrive by
// POST and are handed to Recv one at a time, in order; the Conn's messages
// are queued on the connection's SSE streams, which the client reads with
// GET:
//
//   - an answer goes where its request came from: to the stream of the
//     session named by the request's Acp-Session-Id (or params.sessionId),
//     else to the connection's stream (session/load's answer always does);
//   - a request or notification goes to the stream of its
//     params.sessionId, else to the connection's stream;
//   - but every message goes to the connection's stream when the client
//     asked for one stream (HeaderSingleStream): there, they are read in the
//     order the Conn sent them, which streams of their own would not keep.
//
// A stream buffers its messages until a GET takes them, and keeps what a
// broken GET did not write for the next one. All streams together hold at
// most MaxQueuedBytes; Send waits for room beyond that. The Conn's own
// notifications come through SendNotification and count against its limit
// of unsent notifications until a GET has written them, so a client that
// stops reading holds Notify back at that limit, far below MaxQueuedBytes,
// and an answer or a cancel is queued behind no more than it.
type httpConn struct {
	graceful // how Server.Shutdown ends it

	srv    *Server
	id     string
	single bool        // every message goes on the connection's stream; set before the Conn starts
	in     chan []byte // POST → Recv; unbuffered, so a POST returns once the Conn has the message

	limit atomic.Int64 // the largest POST body accepted
	posts postBudget   // the POSTs whose message the Conn has not taken

	mu           sync.Mutex
	streams      map[string]*outStream   // by session ID; "" is the connection's own
	routes       map[acprpc.IDKey]string // the key of a client request's ID → the stream of its answer
	queued       int                     // bytes waiting on every stream
	room         chan struct{}           // closed and replaced when bytes leave a queue
	initID       acprpc.IDKey            // the key of initialize's ID while its answer is awaited, else zero
	initAnswer   chan []byte             // gets that answer, for the POST of initialize
	closed       chan struct{}
	drainBy      time.Time         // once closed: when its SSE streams must have written what is left
	readers      int               // GETs holding a stream
	lingers      bool              // closed with GETs still writing, or awaited, which count against MaxConnections
	awaitsGets   bool              // closed with messages no GET took: a GET may still take them until drainBy
	reason       error             // why Recv and Send fail, once closed
	notesWritten func(n, size int) // the Conn's, from SendNotification: told when its notifications leave the queues
	closeOnce    sync.Once
	idle         *timing // runs while no GET holds the connection's stream
	writeTimeout time.Duration
}

// outStream is one SSE stream's queue.
type outStream struct {
	queue    []pending
	receiver bool              // a GET holds the stream
	deadline func(t time.Time) // sets the receiving GET's write deadline: drainBy once closed, the past once ousted
	poke     func()            // wakes a receiving GET that waits on its connection (connSink), after wake or the close
	wake     chan struct{}     // signalled when a message is queued
	released chan struct{}     // closed when the receiving GET lets go
	ousted   bool              // a GET resuming the stream takes it over: the receiving one stops
	resume   resumption        // the connection's stream only: what a GET that resumes it needs
}

// pending is a message waiting on a stream.
type pending struct {
	msg  []byte
	note bool // one of the Conn's notifications, counted against its limit until written
}

// errStreamBusy is a GET for a stream that another GET holds.
var errStreamBusy = errors.New("remote: the SSE stream already has a reader")

// errTooManySessions is a GET or a message for one session too many.
var errTooManySessions = errors.New("remote: too many session streams on the connection")

func newHTTPConn(s *Server) *httpConn {
	h := &httpConn{
		srv:          s,
		id:           newConnectionID(),
		in:           make(chan []byte),
		streams:      map[string]*outStream{"": newResumableStream()},
		routes:       make(map[acprpc.IDKey]string),
		room:         make(chan struct{}),
		initAnswer:   make(chan []byte, 1),
		closed:       make(chan struct{}),
		writeTimeout: s.opts.WriteTimeout,
		posts:        postBudget{maxPosts: s.opts.MaxPendingPosts, maxBytes: s.opts.MaxPendingBytes},
	}
	h.limit.Store(int64(s.opts.MaxMessageSize))
	if d := s.opts.IdleTimeout; d > 0 {
		h.idle = newTiming(d, func() {
			h.closeWith(fmt.Errorf("remote: no SSE stream open for %v", d))
		})
		h.idle.arm() // until the client opens the connection's stream
	}
	return h
}

func newOutStream() *outStream { return &outStream{wake: make(chan struct{}, 1)} }

// newResumableStream is the connection's stream: its events carry IDs, and
// a GET that comes back after a cut resumes it after the last it read.
func newResumableStream() *outStream {
	st := newOutStream()
	st.resume.on = true
	return st
}

// SetReadLimit bounds the POST bodies of this connection.
func (h *httpConn) SetReadLimit(n int) {
	if n > 0 {
		h.limit.Store(int64(n))
		h.posts.fit(n)
	}
}

// Recv returns the next POSTed message. Once the connection has closed it
// returns why (errDeleted, which matches io.EOF, when the client ended it
// with DELETE), saying the peer is gone: nothing is sent after the close.
func (h *httpConn) Recv() ([]byte, error) {
	select {
	case m := <-h.in:
		return m, nil
	case <-h.closed:
		return nil, peerGone{h.reason}
	}
}

// errDeleted is why a connection the client ended with DELETE closed.
var errDeleted = fmt.Errorf("remote: the client ended the connection with DELETE: %w", io.EOF)

// Send queues msg on the stream it belongs to, waiting for room when the
// client is behind, for at most WriteTimeout.
func (h *httpConn) Send(msg []byte) error { return h.send(msg, false) }

// SendNotification is Send for one of the Conn's notifications, which
// stays counted against the Conn's limit of unsent notifications until a
// GET has written it: written is told then (acprpc.Transport).
func (h *httpConn) SendNotification(msg []byte, written func(n, size int)) error {
	h.mu.Lock()
	h.notesWritten = written // the same every time
	h.mu.Unlock()
	return h.send(msg, true)
}

func (h *httpConn) send(msg []byte, note bool) error {
	env := peek(msg)
	msg = append([]byte(nil), msg...) // Send's argument is only lent
	var stall <-chan time.Time
	for {
		h.mu.Lock()
		if h.isClosed() {
			h.mu.Unlock()
			return h.reason
		}
		if h.answersInit(env, msg) {
			h.mu.Unlock()
			return nil
		}
		if h.queued < h.srv.opts.MaxQueuedBytes {
			err := h.push(h.routeOf(env), pending{msg, note})
			h.mu.Unlock()
			if err != nil {
				h.closeWith(err)
			}
			return err
		}
		room := h.room
		h.mu.Unlock()
		if stall == nil && h.writeTimeout > 0 {
			t := time.NewTimer(h.writeTimeout)
			defer t.Stop()
			stall = t.C
		}
		select {
		case <-room:
		case <-h.closed:
		case <-stall:
			err := fmt.Errorf("remote: the client read nothing for %v", h.writeTimeout)
			h.closeWith(err)
			return err
		}
	}
}

// answersInit hands the answer to initialize to the POST waiting for it;
// it is not queued on any stream. Called with h.mu held.
func (h *httpConn) answersInit(env envelope, msg []byte) bool {
	if key, ok := env.answeredKey(); !ok || key != h.initID {
		return false
	}
	h.initID = acprpc.IDKey{}
	h.initAnswer <- msg
	return true
}

// routeOf returns the stream a message of the Conn goes to. Called with
// h.mu held.
func (h *httpConn) routeOf(env envelope) string {
	switch {
	case h.single:
		return ""
	case !env.isResponse():
		return env.sessionID()
	}
	key, ok := env.answeredKey()
	if !ok {
		return "" // an answer with "id": null has no request to go back to
	}
	route := h.routes[key]
	delete(h.routes, key)
	return route
}

// expectAnswer records where the Conn's answer to a client's message goes,
// under the key of the ID the answer will carry. A message the Conn answers
// with "id": null, or not at all, has no route: nothing would remove it,
// and nor has any message of a client that reads one stream.
func (h *httpConn) expectAnswer(env envelope, session string) {
	key, ok := env.answerKey()
	if !ok || h.single {
		return
	}
	if env.methodName() == methodSessionLoad {
		session = "" // a loaded session's replay may outrun its stream, so the answer takes the connection's
	}
	h.mu.Lock()
	h.routes[key] = session
	h.mu.Unlock()
}

// forgetAnswer drops the route of a request that never reached the Conn.
func (h *httpConn) forgetAnswer(env envelope) {
	key, ok := env.answerKey()
	if !ok {
		return
	}
	h.mu.Lock()
	delete(h.routes, key)
	h.mu.Unlock()
}

// push queues m on the stream of session. Called with h.mu held.
//
// A notification for a session whose stream no GET has opened yet does
// not count against the Conn's limit: its client has not yet learned of
// the session (session/new's answer names it), and is not slow but still
// to come. Held to the limit, a handler that sent more updates of a new
// session than the limit before answering session/new would wait for a
// GET that only its answer brings. What waits there is bounded by
// MaxQueuedBytes alone. The connection's stream, which the client opens
// right after initialize, always counts.
func (h *httpConn) push(session string, m pending) error {
	st, err := h.stream(session)
	if err != nil {
		return err
	}
	if m.note && session != "" && !st.receiver {
		m.note = false
		h.notesWritten(1, len(m.msg))
	}
	st.queue = append(st.queue, m)
	h.queued += len(m.msg)
	select {
	case st.wake <- struct{}{}:
	default:
	}
	if st.poke != nil {
		st.poke()
	}
	return nil
}

// stream returns the stream of session, made on first use, up to
// MaxSessions. Called with h.mu held.
func (h *httpConn) stream(session string) (*outStream, error) {
	if st := h.streams[session]; st != nil {
		return st, nil
	}
	if len(h.streams)-1 >= h.srv.opts.MaxSessions {
		return nil, errTooManySessions
	}
	st := newOutStream()
	h.streams[session] = st
	return st, nil
}

// attach gives a GET the stream of session. deadline sets the GET's write
// deadline, for a write stuck when the connection closes or the GET is
// ousted. A GET that resumes the connection's stream (lastEventID, see
// resume.go) takes it over from a GET that still holds it, and starts after
// the last event the client read.
func (h *httpConn) attach(ctx context.Context, session, lastEventID string, deadline func(time.Time)) (*outStream, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.isClosed() {
		return h.lateStream(session, lastEventID)
	}
	st, err := h.stream(session)
	if err != nil {
		return nil, err
	}
	if st.receiver {
		if !st.resume.on || lastEventID == "" {
			return nil, errStreamBusy
		}
		if err := h.mayResume(st, lastEventID); err != nil {
			return nil, err // refused before the GET that holds the stream is ended
		}
		if !h.oust(ctx, st) {
			return nil, errStreamBusy
		}
	}
	if h.isClosed() {
		return h.lateStream(session, lastEventID)
	}
	if st.resume.on {
		if err := h.resumeAfter(st, lastEventID); err != nil {
			return nil, err
		}
	}
	st.receiver = true
	st.ousted = false
	st.released = make(chan struct{})
	st.deadline = deadline
	h.readers++
	if session == "" {
		h.idle.disarm()
	}
	return st, nil
}

// setWaker replaces st's deadline, once its GET's connection is taken from
// net/http (hijackStream), so that it holds no reference to net/http's, and
// sets its poke.
func (h *httpConn) setWaker(st *outStream, deadline func(time.Time), poke func()) {
	h.mu.Lock()
	st.deadline, st.poke = deadline, poke
	h.mu.Unlock()
}

// detach releases a GET's stream. A session stream left empty is dropped;
// the connection's own starts the idle clock.
func (h *httpConn) detach(session string, st *outStream) {
	h.mu.Lock()
	st.receiver = false
	st.deadline, st.poke = nil, nil
	close(st.released)
	h.readers--
	release := h.lingers && h.readers == 0 && !h.awaitsGets
	if release {
		h.lingers = false
	}
	switch {
	case h.isClosed():
	case session == "":
		h.idle.arm()
	case len(st.queue) == 0 && h.streams[session] == st:
		delete(h.streams, session)
	}
	h.mu.Unlock()
	if release {
		h.srv.release()
	}
}

// writeDeadline is when the next write of a GET must be done: WriteTimeout
// from now (none when it is off), and once the connection has closed, no
// later than drainBy.
func (h *httpConn) writeDeadline() time.Time {
	var d time.Time
	if h.writeTimeout > 0 {
		d = time.Now().Add(h.writeTimeout)
	}
	if h.isClosed() && (d.IsZero() || h.drainBy.Before(d)) {
		d = h.drainBy // set before closed was closed
	}
	return d
}

// The most a stream writes at once: the messages queued when it wakes, in
// one system call, as many as fit in batchBytes (but always one, whatever
// its size), at most batchMessages.
const (
	batchMessages = 64
	batchBytes    = 64 << 10
)

// head returns the oldest messages of st (a batch of them) without taking
// them, so that messages a GET fails to write stay queued; nil when none
// is queued. first is the event ID of the first, 0 on a stream without IDs.
func (h *httpConn) head(st *outStream) (msgs [][]byte, first uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, size := 0, 0
	for n < len(st.queue) && n < batchMessages && (n == 0 || size+len(st.queue[n].msg) <= batchBytes) {
		size += len(st.queue[n].msg)
		n++
	}
	if n == 0 {
		return nil, 0
	}
	msgs = make([][]byte, n)
	for i, m := range st.queue[:n] {
		msgs[i] = m.msg
	}
	return msgs, st.resume.nextID()
}

// taken removes st's n oldest messages, written by its GET, and makes
// room.
func (h *httpConn) taken(st *outStream, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.written(st, n)
	if len(st.queue) == 0 {
		st.queue = nil // let the array go
	}
}

// written removes st's n oldest messages, which have been written, keeping
// them for a GET that resumes st, and makes room, in the queues and, for
// the Conn's notifications among them, in the Conn's own limit. Called
// with h.mu held.
func (h *httpConn) written(st *outStream, n int) {
	notes, notesSize := 0, 0
	for i, m := range st.queue[:n] {
		h.queued -= len(m.msg)
		st.resume.written(m.msg, h.keepBytes())
		if m.note {
			notes++
			notesSize += len(m.msg)
		}
		st.queue[i] = pending{}
	}
	st.queue = st.queue[n:]
	close(h.room)
	h.room = make(chan struct{})
	if notes > 0 {
		h.notesWritten(notes, notesSize)
	}
}

// isClosed is called with h.mu held or not: closed is only ever closed.
func (h *httpConn) isClosed() bool {
	select {
	case <-h.closed:
		return true
	default:
		return false
	}
}

// Close ends the connection: its Recv and Send fail, its GETs write what
// is queued and end (within closeWait: a client that does not read loses
// the rest), and later requests for it get 404, but for a GET of a stream
// that holds messages no GET took, which within closeWait gets them (the
// client of a turn cancelled by Shutdown may open its session's stream
// after the close). Until its last GET has ended, and while it waits for
// such GETs, it still counts against MaxConnections.
func (h *httpConn) Close() error {
	h.closeWith(io.EOF)
	return nil
}

// closeWith closes the connection for reason, which Recv and Send return
// from then on.
func (h *httpConn) closeWith(reason error) {
	h.closeOnce.Do(func() {
		h.mu.Lock()
		h.awaitsGets = reason == io.EOF && h.unfetched() // Close, not a client that reads nothing, never came or ended it
		h.lingers = h.readers > 0 || h.awaitsGets
		h.srv.forgetLingering(h, h.lingers, h.awaitsGets) // first, so that no one finds it open after its Recv fails
		h.reason = reason
		h.drainBy = time.Now().Add(closeWait)
		close(h.closed)
		for _, st := range h.streams {
			if st.deadline != nil {
				st.deadline(h.drainBy) // a write stuck on a client that does not read
			}
			if st.poke != nil {
				st.poke() // a stream waiting on its connection, to write what is left
			}
		}
		h.mu.Unlock()
		h.idle.disarm()
		if h.awaitsGets {
			time.AfterFunc(closeWait, h.stopAwaitingGets)
		}
	})
}

// unfetched reports whether a stream holds messages and no GET to write
// them: a client slow to open a session's stream, say, whose answer the
// close (Shutdown's cancelled answer) would otherwise drop. Only Close
// waits for such GETs; a connection closed because its client stopped
// reading or never opened its stream does not. Called with h.mu held.
func (h *httpConn) unfetched() bool {
	for _, st := range h.streams {
		if len(st.queue) > 0 && !st.receiver {
			return true
		}
	}
	return false
}

// lateStream gives a GET that comes after the close the stream of session,
// if it still holds messages no GET took and drainBy has not passed: the
// GET writes them and ends. A GET that resumes the connection's stream
// gets first what was written after its Last-Event-ID, as before the
// close. Called with h.mu held.
func (h *httpConn) lateStream(session, lastEventID string) (*outStream, error) {
	st := h.streams[session]
	if !h.awaitsGets || st == nil || st.receiver || len(st.queue) == 0 || !time.Now().Before(h.drainBy) {
		return nil, h.reason
	}
	if st.resume.on {
		if err := h.resumeAfter(st, lastEventID); err != nil {
			return nil, err
		}
	}
	st.receiver = true
	st.released = make(chan struct{})
	h.readers++
	return st, nil
}

// stopAwaitingGets ends, at drainBy, the wait for GETs of a closed
// connection: what no GET took is dropped, the connection is no longer
// found, and once its last GET has ended its place is free.
func (h *httpConn) stopAwaitingGets() {
	h.mu.Lock()
	h.awaitsGets = false
	release := h.lingers && h.readers == 0
	if release {
		h.lingers = false
	}
	h.mu.Unlock()
	h.srv.unlist(h)
	if release {
		h.srv.release()
	}
}

var _ acprpc.Transport = (*httpConn)(nil)
