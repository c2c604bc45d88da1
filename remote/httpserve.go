package remote

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"
)

// servePost takes one client message. initialize without a connection ID
// opens a connection and is answered 200 with the answer and the new
// Acp-Connection-Id; any other message is handed to its connection's Conn
// and answered 202 once the Conn has it. Either waits within a bound from
// before its body is read: a POST without a connection ID holds a place
// among MaxConnections, one for a connection a place in its postBudget.
func (s *Server) servePost(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(HeaderConnectionID)
	if id == "" {
		s.serveInitialize(w, r)
		return
	}
	h := s.lookup(id, false)
	if h == nil {
		refuseUnread(w, &refusal{http.StatusNotFound, "Not Found: unknown " + HeaderConnectionID})
		return
	}
	if !h.posts.enter() {
		s.refuseOverBudget(w, r)
		return
	}
	charged := &chargedBody{ReadCloser: r.Body, budget: &h.posts}
	r.Body = charged
	defer func() { h.posts.leave(charged.charged) }()
	body, status, why := readMessageBody(w, r, h.limit.Load())
	switch {
	case status == http.StatusTooManyRequests:
		s.refuseOverBudget(w, r)
		return
	case status != 0:
		http.Error(w, why, status)
		return
	}
	s.deliverPost(w, r, h, body)
}

// serveInitialize takes a POST without a connection ID, which must be
// initialize, and opens a connection with it. Its body is read in a place
// reserved among MaxConnections, so that POSTs whose bodies never come
// cannot pile up beyond them; the place becomes the connection's, so that
// no request that came later can take it in between.
func (s *Server) serveInitialize(w http.ResponseWriter, r *http.Request) {
	if ref := s.reserve(); ref != nil {
		s.refusals.refused(r, ref)
		refuseUnread(w, ref)
		return
	}
	body, status, why := readMessageBody(w, r, int64(s.opts.MaxMessageSize))
	env := peek(body)
	if status == 0 && (!env.isRequest() || env.methodName() != methodInitialize) {
		status, why = http.StatusBadRequest, "Bad Request: missing "+HeaderConnectionID
	}
	if status != 0 {
		s.unreserve()
		http.Error(w, why, status)
		return
	}
	testHookInitializeRead()
	s.openHTTP(w, r, body, env)
}

// testHookInitializeRead is called once the body of a POST of initialize
// has been read, before its connection is opened; tests replace it to
// open another connection at that point.
var testHookInitializeRead = func() {}

// refuseUnread refuses a POST whose body was not read whole, and closes
// its HTTP connection at once: net/http would otherwise read the rest of
// the body, before answering or after, and a body that never comes would
// hold the connection until BodyTimeout.
func refuseUnread(w http.ResponseWriter, ref *refusal) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now()) // nothing more is read
	refuse(w, ref)
}

// deliverPost hands a POSTed message to its connection's Conn, recording
// where the answer to a request goes.
func (s *Server) deliverPost(w http.ResponseWriter, r *http.Request, h *httpConn, body []byte) {
	env := peek(body)
	if env.isRequest() && env.methodName() == methodInitialize {
		http.Error(w, "Bad Request: initialize not allowed on an existing connection", http.StatusBadRequest)
		return
	}
	session := r.Header.Get(HeaderSessionID)
	if p := env.sessionID(); p != "" && session != "" && p != session {
		http.Error(w, "Bad Request: "+HeaderSessionID+" does not match params.sessionId", http.StatusBadRequest)
		return
	} else if session == "" {
		session = p
	}
	h.expectAnswer(env, session)
	select {
	case h.in <- body:
		setWriteDeadline(w, s.opts.WriteTimeout)
		w.WriteHeader(http.StatusAccepted)
	case <-h.closed:
		h.forgetAnswer(env)
		http.Error(w, "Not Found: the connection is closed", http.StatusNotFound)
	case <-r.Context().Done():
		h.forgetAnswer(env) // the client gave up before the Conn took the message
	}
}

// readMessageBody reads a POST's body, which must be one JSON object of at
// most limit bytes, sent within BodyTimeout (the read deadline ServeHTTP
// set); otherwise it returns the status and text of the refusal. A batch
// gets 501: ACP has no batches.
func readMessageBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, int, string) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, http.StatusUnsupportedMediaType, "Unsupported Media Type: send application/json"
	}
	rc := http.NewResponseController(w)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err == nil {
		_ = rc.SetReadDeadline(time.Time{}) // the wait for the Conn is bounded by other means
	} // else the deadline stays, for what net/http reads of the body after the handler
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, http.StatusRequestEntityTooLarge, "Request Entity Too Large: the message exceeds the size limit"
	case errors.Is(err, errPostBudget):
		return nil, http.StatusTooManyRequests, ""
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		return nil, http.StatusRequestTimeout, "Request Timeout: the body did not come in time"
	case err != nil:
		return nil, http.StatusBadRequest, "Bad Request: " + err.Error()
	case !json.Valid(body):
		return nil, http.StatusBadRequest, "Bad Request: invalid JSON"
	}
	switch jsonKind(body) {
	case '[':
		return nil, http.StatusNotImplemented, "Not Implemented: JSON-RPC batches are not supported"
	case '{':
		return body, 0, ""
	}
	return nil, http.StatusBadRequest, "Bad Request: a message must be a JSON object"
}

// openHTTP opens a Streamable HTTP connection, in the place reserved for
// it, for the POST of initialize: its Conn gets the request, and its
// answer is the POST's. A client that asks for one stream
// (HeaderSingleStream) gets it, and the answer says so.
func (s *Server) openHTTP(w http.ResponseWriter, r *http.Request, body []byte, env envelope) {
	h := newHTTPConn(s)
	h.initID, _ = env.answerKey()
	h.single = r.Header.Get(HeaderSingleStream) == "1"
	if ref := s.admitReserved(h); ref != nil {
		h.idle.disarm()
		refuse(w, ref)
		return
	}
	if !h.isClosed() { // Close may have come between admit and here
		s.accept(h, r)
	}
	s.handedOver()
	select {
	case h.in <- body:
	case <-h.closed:
	case <-r.Context().Done():
	}
	select {
	case answer := <-h.initAnswer:
		setWriteDeadline(w, s.opts.WriteTimeout)
		w.Header().Set(HeaderConnectionID, h.id)
		if h.single {
			w.Header().Set(HeaderSingleStream, "1")
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	case <-h.closed:
		http.Error(w, "Internal Server Error: the connection closed before initialize was answered", http.StatusInternalServerError)
	case <-r.Context().Done():
		h.Close() // the client is gone and will never learn the connection's ID
	}
}

// lookup returns the connection id names. A closed one is found only by a
// GET, while it keeps messages no GET took (httpConn.awaitsGets); anything
// else gets 404.
func (s *Server) lookup(id string, forGet bool) *httpConn {
	if id == "" {
		return nil
	}
	s.mu.Lock()
	h := s.streams[id]
	s.mu.Unlock()
	if h != nil && !forGet && h.isClosed() {
		return nil
	}
	return h
}

// serveGet streams a connection's messages as SSE: those of the session
// named by Acp-Session-Id, or with none, the connection's own. It ends when
// the client goes or the connection closes, after writing what is queued.
func (s *Server) serveGet(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(strings.ToLower(r.Header.Get("Accept")), "text/event-stream") {
		http.Error(w, "Not Acceptable: send Accept: text/event-stream", http.StatusNotAcceptable)
		return
	}
	id := r.Header.Get(HeaderConnectionID)
	if id == "" {
		http.Error(w, "Bad Request: missing "+HeaderConnectionID, http.StatusBadRequest)
		return
	}
	h := s.lookupOr404(w, id, true)
	if h == nil {
		return
	}
	session := r.Header.Get(HeaderSessionID)
	rc := http.NewResponseController(w)
	st, err := h.attach(r.Context(), session, r.Header.Get("Last-Event-ID"), func(d time.Time) { _ = rc.SetWriteDeadline(d) })
	switch {
	case errors.Is(err, errStreamBusy), errors.Is(err, errTooManySessions):
		ref := &refusal{http.StatusConflict, "Conflict: " + strings.TrimPrefix(err.Error(), "remote: ")}
		s.refusals.refused(r, ref)
		http.Error(w, ref.reason, ref.status)
		return
	case errors.Is(err, errResumeAhead):
		http.Error(w, "Bad Request: "+strings.TrimPrefix(err.Error(), "remote: "), http.StatusBadRequest)
		return
	case errors.Is(err, errResumeLost):
		h.closeWith(err)
		http.Error(w, "Gone: "+strings.TrimPrefix(err.Error(), "remote: "), http.StatusGone)
		return
	case err != nil:
		http.Error(w, "Not Found: the connection is closed", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no") // tell proxies not to hold events back
	w.Header().Set("Connection", "close")     // a stream that ends leaves no idle connection behind
	if sink := s.hijackStream(w, r, h, st); sink != nil {
		go func() { // net/http's goroutine returns, and its buffers go with it
			defer s.rawStreams.Done()
			defer h.detach(session, st)
			defer sink.close()
			if sink.head(h.writeDeadline()) == nil {
				s.stream(sink, h, st)
			}
		}()
		return
	}
	defer h.detach(session, st)
	w.WriteHeader(http.StatusOK)
	if flushBy(rc, h.writeDeadline()) != nil {
		return
	}
	sink := newResponseSink(w, rc, r, h, st, s.opts.KeepAlive)
	defer sink.stopTks()
	s.stream(sink, h, st)
}

// flushBy flushes what was written, failing at the deadline (none when
// zero): every write of an SSE stream has one, so a client that stops
// reading cannot hold the stream's goroutine, connection and queue.
func flushBy(rc *http.ResponseController, deadline time.Time) error {
	_ = rc.SetWriteDeadline(deadline) // ErrNotSupported under a server without deadlines
	return rc.Flush()
}

// stream writes st's messages to sink as they come (those queued together
// at once), with a keep-alive comment every KeepAlive, until a GET that
// resumes the stream ousts it. A message leaves the queue only once it was
// written, so one that a broken GET did not write goes to the next.
func (s *Server) stream(sink eventSink, h *httpConn, st *outStream) {
	for !h.isOusted(st) {
		if msgs, first := h.head(st); msgs != nil {
			if sink.events(msgs, first, h.writeDeadline()) != nil {
				return
			}
			h.taken(st, len(msgs))
			continue
		}
		if h.isClosed() {
			return // and everything queued was written
		}
		switch sink.wait() {
		case keepAliveDue:
			if sink.keepAlive(h.writeDeadline()) != nil {
				return
			}
		case gone:
			return
		}
	}
}

// serveDelete ends a connection at the client's request.
func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request) {
	h := s.lookupOr404(w, r.Header.Get(HeaderConnectionID), false)
	if h == nil {
		return
	}
	h.Close()
	w.WriteHeader(http.StatusAccepted)
}

// lookupOr404 returns what lookup finds, or answers 404 and returns nil
// when it finds none.
func (s *Server) lookupOr404(w http.ResponseWriter, id string, forGet bool) *httpConn {
	h := s.lookup(id, forGet)
	if h == nil {
		http.Error(w, "Not Found: unknown "+HeaderConnectionID, http.StatusNotFound)
	}
	return h
}
