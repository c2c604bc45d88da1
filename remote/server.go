package remote

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/acpkit/acprpc"
)

// The headers of ACP's Streamable HTTP transport. The WebSocket upgrade's
// answer carries the connection ID too.
const (
	HeaderConnectionID = "Acp-Connection-Id"
	HeaderSessionID    = "Acp-Session-Id"

	// HeaderSingleStream, "1" on the POST of initialize, asks the server to
	// send every message of the connection on the connection's SSE stream,
	// the one stream whose order is the order the agent sent them in; "1"
	// on the answer says the server does. acprpc's client asks, and acprpc's
	// server does; a peer that knows nothing of it (the TypeScript SDK's)
	// neither asks nor answers, and gets a stream per session as the RFD
	// describes. See docs/transports.md, "Order across streams".
	HeaderSingleStream = "Acp-Single-Stream"
)

// An AcceptFunc starts serving a new connection over t, usually with
// acprpc.NewConn (see Handle). It is called once per connection, after the
// request passed every check of the Server and before the connection's
// first message is read, on the goroutine of the HTTP request that opened
// the connection, so it must not block.
//
// r is that request: the WebSocket upgrade, or the POST of initialize. Its
// headers, TLS state and peer address say who connected; its context ends
// with the request, not with the connection. The connection ends when t is
// closed, by its Conn or by the Server.
type AcceptFunc func(t acprpc.Transport, r *http.Request)

// Server serves ACP at one endpoint over WebSocket and over Streamable
// HTTP, handing each connection, as an acprpc.Transport, to its AcceptFunc.
// A WebSocket upgrade (GET with Upgrade: websocket) opens a WebSocket
// connection; a POST of initialize opens a Streamable HTTP one, which later
// POSTs, GETs (its SSE streams) and DELETE address by its Acp-Connection-Id.
//
// Every request passes the checks of Options first: the peer's address, the
// Host header, the Origin header, then Authenticate (but for the CORS
// preflight of an allowed origin, answered without credentials, as a
// browser sends it).
//
// A Server is an http.Handler, to mount in a mux under a server of one's
// own, or serves on its own with Serve and ListenAndServe, which also apply
// ReadHeaderTimeout and TLSConfig.
type Server struct {
	accept   AcceptFunc
	opts     Options
	refusals *refusalLog // logs the refusals, rate limited

	mu      sync.Mutex
	open    map[acprpc.Transport]struct{} // every connection, to close them all
	streams map[string]*httpConn          // Streamable HTTP connections by ID
	closed  bool
	// lingering counts closed Streamable HTTP connections whose SSE
	// streams are still writing, each for at most closeWait.
	lingering int
	reserved  int            // POSTs of initialize whose bodies are being read
	servers   []*http.Server // those of Serve, to shut down with Close
	wg        sync.WaitGroup // the servers' Serve calls
	// rawStreams counts the SSE streams running on connections taken from
	// net/http (hijackStream), which Close waits for as http.Server's
	// Shutdown waits for the others.
	rawStreams sync.WaitGroup

	draining  bool          // Shutdown has begun: new connections are refused
	accepting int           // connections admitted and not yet handed to accept
	accepted  chan struct{} // closed when accepting drops to zero during a drain
}

// NewServer returns a Server that hands each new connection to accept.
// opts may be nil for the defaults.
func NewServer(accept AcceptFunc, opts *Options) *Server {
	settled := opts.settled()
	return &Server{
		accept:   accept,
		opts:     settled,
		refusals: newRefusalLog(settled.Logger),
		open:     make(map[acprpc.Transport]struct{}),
		streams:  make(map[string]*httpConn),
	}
}

// ServeHTTP serves one request: a WebSocket upgrade, or a POST, GET or
// DELETE of Streamable HTTP. Any other method gets 405.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	page := s.allowedPage(r)
	if page != "" {
		allowCrossOrigin(w, page) // on every answer, so that the page can read a refusal too
	}
	if ref := s.checkSource(r); ref != nil {
		s.refusals.refused(r, ref)
		refuseRequest(w, ref)
		return
	}
	if !isWebSocketUpgrade(r) { // a WebSocket's writes have their own deadlines, after the upgrade
		setWriteDeadline(w, s.opts.WriteTimeout)
	}
	if r.Method != http.MethodGet && s.opts.BodyTimeout > 0 {
		// A body that never comes, even one the answer does not read
		// (net/http reads some of it before answering), is cut off.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
	}
	if page != "" && isPreflight(r) {
		answerPreflight(w) // before authentication: browsers send a preflight without credentials
		return
	}
	if ref := s.authenticate(r); ref != nil {
		s.refusals.refused(r, ref)
		refuseRequest(w, ref)
		return
	}
	switch {
	case isWebSocketUpgrade(r):
		s.serveWebSocket(w, r)
	case r.Method == http.MethodPost:
		s.servePost(w, r)
	case r.Method == http.MethodGet:
		s.serveGet(w, r)
	case r.Method == http.MethodDelete:
		s.serveDelete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// refuseRequest answers a request that failed a security check, and closes
// its connection: a refused client keeps no connection open.
func refuseRequest(w http.ResponseWriter, ref *refusal) {
	w.Header().Set("Connection", "close")
	if ref == errNoBearerToken {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	http.Error(w, ref.reason, ref.status)
}

func isWebSocketUpgrade(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// serveWebSocket upgrades the request and hands the socket to accept. The
// Origin was checked already, for both transports alike, so the WebSocket
// library's own check (which allows only the same host) is turned off.
func (s *Server) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	var t *wsTransport
	t = prepareWS(wsConfig{
		maxMessage:   s.opts.MaxMessageSize,
		idleTimeout:  s.opts.IdleTimeout,
		writeTimeout: s.opts.WriteTimeout,
		awaitInit:    true,
		onClose:      func() { s.forget(t) },
	})
	if ref := s.admit(t); ref != nil {
		s.refusals.refused(r, ref)
		refuse(w, ref)
		return
	}
	defer s.handedOver()
	testHookUpgrade(upgradeAdmitted, t)
	if t.closing() { // Close came first: no upgrade
		refuse(w, errShuttingDown)
		return
	}
	w.Header().Set(HeaderConnectionID, newConnectionID())
	hw := &hijackWatch{ResponseWriter: w, sendBuffer: s.opts.SendBuffer}
	ws, err := websocket.Accept(hw, r, &websocket.AcceptOptions{
		InsecureSkipVerify: true,
		OnPongReceived:     t.pong,
	})
	if err != nil {
		s.forget(t) // Accept has answered the request
		return
	}
	testHookUpgrade(upgradeAccepted, t)
	t.batch, _ = hw.shaped.(batcher)
	if !t.attach(ws, hw.conn) {
		return // closed during the upgrade, and now its socket too
	}
	testHookUpgrade(upgradeAttached, t)
	s.accept(t, r)
}

// The points of a WebSocket upgrade where a test can step in.
type upgradeStage int

const (
	upgradeAdmitted upgradeStage = iota // counted open, not yet upgraded
	upgradeAccepted                     // upgraded, its socket not yet attached
	upgradeAttached                     // attached, not yet handed to accept
)

// testHookUpgrade is called at each upgradeStage; tests replace it to
// close the Server at that point.
var testHookUpgrade = func(upgradeStage, *wsTransport) {}

// hijackWatch is a ResponseWriter that keeps the connection it hands over
// when the WebSocket library hijacks it, so the transport can close it, and
// hands it over shaped to hold no buffer while it waits (shapeHijacked),
// its send buffer bounded (boundSendBuffer).
type hijackWatch struct {
	http.ResponseWriter
	conn       net.Conn
	shaped     net.Conn // conn as handed over
	sendBuffer int      // Options.SendBuffer, for the socket
}

// Hijack hijacks the underlying ResponseWriter's connection and keeps it.
func (h *hijackWatch) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return c, brw, err
	}
	h.conn = c
	boundSendBuffer(c, h.sendBuffer)
	h.shaped, brw, err = shapeHijacked(c, brw)
	return h.shaped, brw, err
}

// Unwrap gives http.ResponseController the ResponseWriter underneath.
func (h *hijackWatch) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// admit counts t among the open connections, unless the Server is shutting
// down, closed or full. An admitted connection is then handed to accept,
// or fails, and either way calls handedOver: Close waits for that, so that
// no connection reaches accept after Close returns.
func (s *Server) admit(t acprpc.Transport) *refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admitLocked(t)
}

// admitReserved is admit for a connection that reserve took a place for:
// in one step, the place is given back and taken by t, or given back and
// t refused (the Server is shutting down).
func (s *Server) admitReserved(t acprpc.Transport) *refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserved--
	return s.admitLocked(t)
}

// admitLocked is admit with s.mu held.
func (s *Server) admitLocked(t acprpc.Transport) *refusal {
	if ref := s.noPlace(); ref != nil {
		return ref
	}
	s.open[t] = struct{}{}
	if h, ok := t.(*httpConn); ok {
		s.streams[h.id] = h
	}
	s.accepting++
	return nil
}

// forget removes a closed connection.
func (s *Server) forget(t acprpc.Transport) { s.forgetLingering(t, false, false) }

// forgetLingering removes a closed connection; one whose SSE streams are
// still writing, or awaited (lingers), goes on counting against
// MaxConnections until released, so that a client cannot open connection
// after connection whose streams it does not read. One that awaits GETs
// for what its streams hold stays findable by them until unlisted.
func (s *Server) forgetLingering(t acprpc.Transport, lingers, findable bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open, t)
	if h, ok := t.(*httpConn); ok && !findable && s.streams[h.id] == h {
		delete(s.streams, h.id)
	}
	if lingers {
		s.lingering++
	}
}

// unlist makes a closed connection that awaited GETs unknown to them.
func (s *Server) unlist(h *httpConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams[h.id] == h {
		delete(s.streams, h.id)
	}
}

// occupied is how many places among MaxConnections are taken: the open
// connections, the closed ones whose streams still write, and the POSTs
// of initialize whose bodies are being read. Called with s.mu held.
func (s *Server) occupied() int { return len(s.open) + s.lingering + s.reserved }

// noPlace says why a new connection cannot take a place, or returns nil.
// Called with s.mu held.
func (s *Server) noPlace() *refusal {
	switch {
	case s.closed || s.draining:
		return errShuttingDown
	case s.occupied() >= s.opts.MaxConnections:
		return errTooManyConnections
	}
	return nil
}

// reserve takes a place among MaxConnections for a POST of initialize
// while its body is read, or says why not.
func (s *Server) reserve() *refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ref := s.noPlace(); ref != nil {
		return ref
	}
	s.reserved++
	return nil
}

// startRawStream counts one more stream among rawStreams, unless Close has
// begun (and may be waiting for them already).
func (s *Server) startRawStream() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.rawStreams.Add(1)
	return true
}

// unreserve gives back the place of reserve.
func (s *Server) unreserve() {
	s.mu.Lock()
	s.reserved--
	s.mu.Unlock()
}

// errTooManyConnections refuses a connection over MaxConnections.
var errTooManyConnections = &refusal{http.StatusServiceUnavailable, "Service Unavailable: too many connections"}

// setWriteDeadline bounds the writes of a response that starts now by d
// (none when d is 0).
func setWriteDeadline(w http.ResponseWriter, d time.Duration) {
	if d > 0 {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d)) // ErrNotSupported under a server without deadlines
	}
}

// release ends the lingering of a closed connection: its last SSE stream
// has ended.
func (s *Server) release() {
	s.mu.Lock()
	s.lingering--
	s.mu.Unlock()
}

// Connections returns how many connections are open.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// Serve accepts connections on l and serves ACP at Options.Path, with TLS
// when Options.TLSConfig is set, until Close. It returns
// http.ErrServerClosed after Close.
func (s *Server) Serve(l net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle(s.opts.Path, s)
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout, // a keep-alive connection between requests
		MaxHeaderBytes:    64 << 10,
		TLSConfig:         s.opts.TLSConfig,
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return http.ErrServerClosed
	}
	s.servers = append(s.servers, hs)
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	if s.opts.TLSConfig != nil {
		return hs.ServeTLS(l, "", "")
	}
	return hs.Serve(l)
}

// ListenAndServe listens on the TCP address addr and calls Serve. An
// address without a host ("" or ":8080") listens on every interface; the
// loopback defaults still refuse every peer but this machine.
func (s *Server) ListenAndServe(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(l)
}

// Close refuses new connections, closes every open one (their Conns then
// close too; an SSE stream writes what is queued for it first, for at most
// about a second), stops Serve, and returns once Serve has returned. A
// connection still being opened (a WebSocket upgrade under way, an
// initialize not yet handed to the AcceptFunc) is closed, and reaches the
// AcceptFunc, if at all, already closed and before Close returns. It is
// safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	open := make([]acprpc.Transport, 0, len(s.open))
	for t := range s.open {
		open = append(open, t)
	}
	servers := s.servers
	s.servers = nil
	s.mu.Unlock()

	for _, t := range open {
		_ = t.Close()
	}
	s.awaitHandover()
	s.rawStreams.Wait() // each writes what is queued, by its connection's drainBy
	var errs []error
	for _, hs := range servers {
		ctx, cancel := context.WithTimeout(context.Background(), closeWait)
		if hs.Shutdown(ctx) != nil {
			errs = append(errs, hs.Close()) // a client that does not read its stream
		}
		cancel()
	}
	s.wg.Wait()
	return errors.Join(errs...)
}

// awaitHandover waits until every connection admitted before Close has
// been handed to the AcceptFunc or given up (one being opened sees it is
// closed, and is not served), for at most closeWait: an AcceptFunc that
// calls Close is among those it waits for.
func (s *Server) awaitHandover() {
	bound := time.NewTimer(closeWait)
	defer bound.Stop()
	select {
	case <-s.beginDrain():
	case <-bound.C:
	}
}

// newConnectionID returns a random UUID (version 4), as other servers use.
func newConnectionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
