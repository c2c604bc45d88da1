package remote

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/acpkit/acprpc"
)

// drainRetryAfter is the Retry-After of a connection refused during a
// drain, in seconds: by then a balancer has sent the client elsewhere, or
// the replica is back.
const drainRetryAfter = "1"

// errShuttingDown is why a new connection is refused once Shutdown or
// Close has begun.
var errShuttingDown = &refusal{http.StatusServiceUnavailable, "Service Unavailable: the server is shutting down"}

// graceful is how Server.Shutdown ends one connection gracefully: its
// Conn's Shutdown, as OnShutdown sets it. Both of the Server's transports
// embed it.
type graceful struct {
	mu       sync.Mutex
	shutdown func(context.Context) error
}

func (g *graceful) setShutdown(f func(context.Context) error) {
	g.mu.Lock()
	g.shutdown = f
	g.mu.Unlock()
}

func (g *graceful) shutdownFunc() func(context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.shutdown
}

// OnShutdown tells the Server that handed t to its AcceptFunc how to end
// that connection gracefully when Server.Shutdown drains it: usually with
// the Conn that runs over t, whose Shutdown answers every request in
// flight as cancelled (Handle does this for its Conns). shutdown must
// return once its context ends. An AcceptFunc calls it before it returns;
// a connection without it is closed at the end of the drain, as Close
// closes it.
//
// It reports whether t is of a kind a Server hands out; on any other
// transport (one the AcceptFunc wrapped, say) it does nothing.
func OnShutdown(t acprpc.Transport, shutdown func(context.Context) error) bool {
	g, ok := t.(interface {
		setShutdown(func(context.Context) error)
	})
	if ok {
		g.setShutdown(shutdown)
	}
	return ok
}

// Shutdown drains the Server, then closes it. From its start, a new
// connection (a WebSocket upgrade, or a POST of initialize, even on a
// keep-alive connection that served requests before) is refused with 503
// Service Unavailable, Retry-After and Connection: close, so that a load
// balancer sends the client to another replica; the requests of the open
// connections are served as before. Each open connection is shut down with
// what OnShutdown set for it (for a Conn, its Shutdown: every request in
// flight is answered as cancelled, then the connection closes), all at
// once; then Shutdown closes the Server as Close does, which also closes
// the connections that had nothing set.
//
// ctx bounds the drain: when it ends first, Shutdown closes the Server at
// once and returns ctx's error. Otherwise it returns what Close returns.
// Calling Shutdown or Close during a Shutdown is safe.
func (s *Server) Shutdown(ctx context.Context) error {
	select {
	case <-s.beginDrain():
	case <-ctx.Done():
		return errors.Join(ctx.Err(), s.Close())
	}
	var shutdowns sync.WaitGroup
	for _, t := range s.openConnections() {
		g, ok := t.(interface {
			shutdownFunc() func(context.Context) error
		})
		if !ok {
			continue
		}
		if shutdown := g.shutdownFunc(); shutdown != nil {
			shutdowns.Go(func() { _ = shutdown(ctx) })
		}
	}
	drained := make(chan struct{})
	go func() {
		shutdowns.Wait()
		close(drained)
	}()
	select {
	case <-drained:
		return s.Close()
	case <-ctx.Done():
		return errors.Join(ctx.Err(), s.Close())
	}
}

// beginDrain refuses new connections from now on and returns a channel
// closed once every connection admitted before has been handed to the
// AcceptFunc, so that what it set with OnShutdown is seen.
func (s *Server) beginDrain() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.draining = true
	if s.accepting == 0 {
		return closedChan
	}
	if s.accepted == nil {
		s.accepted = make(chan struct{})
	}
	return s.accepted
}

// handedOver marks the end of one connection's admission: the AcceptFunc
// has returned, or the connection failed before it.
func (s *Server) handedOver() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accepting--
	if s.accepting == 0 && s.accepted != nil {
		close(s.accepted)
		s.accepted = nil
	}
}

// openConnections returns every open connection.
func (s *Server) openConnections() []acprpc.Transport {
	s.mu.Lock()
	defer s.mu.Unlock()
	open := make([]acprpc.Transport, 0, len(s.open))
	for t := range s.open {
		open = append(open, t)
	}
	return open
}

// refuse answers a request the Server will not take. A refusal because the
// Server is shutting down tells the client when to come back and closes
// the HTTP connection, so that a balancer's next request on it goes to a
// fresh connection, possibly to another replica.
func refuse(w http.ResponseWriter, ref *refusal) {
	if ref == errShuttingDown {
		w.Header().Set("Retry-After", drainRetryAfter)
		w.Header().Set("Connection", "close")
	}
	http.Error(w, ref.reason, ref.status)
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
