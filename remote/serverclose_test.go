package remote

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

// hookUpgrade makes the WebSocket upgrade stop at stage and report its
// transport on the channel it returns, until release is closed. It is
// undone with the test, after the test's server has closed.
func hookUpgrade(t *testing.T, stage upgradeStage, release <-chan struct{}) <-chan *wsTransport {
	t.Helper()
	at := make(chan *wsTransport, 1)
	saved := testHookUpgrade
	t.Cleanup(func() { testHookUpgrade = saved })
	testHookUpgrade = func(s upgradeStage, tr *wsTransport) {
		if s == stage {
			at <- tr
			<-release
		}
	}
	return at
}

// TestServerCloseDuringWebSocketUpgrade closes the Server while an upgrade
// is at each of its stages: admitted (counted open, no socket yet),
// upgraded (the socket open, not yet attached) and attached (not yet handed
// to the AcceptFunc). Close must not panic, and the client's socket must
// end; the connection must not reach the AcceptFunc before it has its
// socket, and once attached it reaches it closed, before Close returns.
func TestServerCloseDuringWebSocketUpgrade(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stage    upgradeStage
		upgraded bool // whether the client gets its 101
		accepted bool // whether the closed connection reaches the AcceptFunc
	}{
		{"before the upgrade", upgradeAdmitted, false, false},
		{"after the upgrade", upgradeAccepted, true, false},
		{"after the socket is attached", upgradeAttached, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			at := hookUpgrade(t, tc.stage, release)
			ts := startServer(t, nil)

			type dialed struct {
				ws   *websocket.Conn
				resp *http.Response
				err  error
			}
			dialDone := make(chan dialed, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				ws, resp, err := websocket.Dial(ctx, ts.url("ws"), nil)
				dialDone <- dialed{ws, resp, err}
			}()
			tr := <-at
			assert.Equal(t, 1, ts.Connections(), "counted open before it has a socket")

			closed := make(chan error, 1)
			go func() { closed <- ts.Close() }()
			<-tr.ctx.Done() // Close has closed the transport
			close(release)
			require.NoError(t, <-closed)

			d := <-dialDone
			if tc.upgraded {
				require.NoError(t, d.err)
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				_, _, err := d.ws.Read(ctx)
				assert.Error(t, err, "the socket is closed under the client")
				d.ws.CloseNow()
			} else {
				require.Error(t, d.err)
				require.NotNil(t, d.resp)
				assert.Equal(t, http.StatusServiceUnavailable, d.resp.StatusCode)
			}
			if tc.accepted {
				select {
				case tr := <-ts.accepted:
					<-ts.requests
					_, err := tr.Recv()
					assert.Error(t, err, "handed over closed")
				default:
					t.Fatal("Close returned before the connection it closed reached the AcceptFunc")
				}
			}
			ts.noneAccepted(t)
			assert.Zero(t, ts.Connections())
		})
	}
}

// TestServerCloseWhileClientsConnect stops servers while clients keep
// connecting over both transports: every Close returns without a panic,
// nothing reaches the AcceptFunc once Close has returned, and every
// connection served ends.
func TestServerCloseWhileClientsConnect(t *testing.T) {
	rounds, clients := 30, 8
	if testing.Short() {
		rounds = 8
	}
	for range rounds {
		closeRound(t, clients)
	}
}

// closeRound runs clients connecting in a loop against one server, and
// closes the server once a few connections of each transport were served.
func closeRound(t *testing.T, clients int) {
	var closedDone atomic.Bool
	var lateAccepts, accepted atomic.Int64
	var served sync.WaitGroup
	enough := make(chan struct{})
	var enoughOnce sync.Once
	srv := NewServer(func(tr acprpc.Transport, r *http.Request) {
		if closedDone.Load() {
			lateAccepts.Add(1)
		}
		if accepted.Add(1) == int64(2*clients) {
			enoughOnce.Do(func() { close(enough) })
		}
		served.Add(1)
		go func() {
			defer served.Done()
			echoInitialize(tr)
		}()
	}, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveDone := make(chan error, 1)
	go func() { serveDone <- srv.Serve(l) }()

	stop := make(chan struct{})
	var dialers sync.WaitGroup
	for i := range clients {
		scheme := "ws"
		if i%2 == 1 {
			scheme = "http"
		}
		dialers.Add(1)
		go func() {
			defer dialers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				connectOnce(scheme + "://" + l.Addr().String() + DefaultPath)
			}
		}()
	}
	select {
	case <-enough:
	case <-serveDone:
		t.Fatal("Serve returned before Close")
	}
	require.NoError(t, srv.Close())
	closedDone.Store(true)
	close(stop)
	dialers.Wait()
	require.ErrorIs(t, <-serveDone, http.ErrServerClosed)
	served.Wait() // every served transport ended
	assert.Zero(t, lateAccepts.Load(), "a connection reached the AcceptFunc after Close returned")
	assert.Zero(t, srv.Connections())
}

// echoInitialize plays a minimal agent on tr: it answers initialize and
// reads until the transport ends, then closes it.
func echoInitialize(tr acprpc.Transport) {
	defer tr.Close()
	for {
		msg, err := tr.Recv()
		if err != nil {
			return
		}
		if env := peek(msg); env.isRequest() && env.methodName() == methodInitialize {
			if tr.Send([]byte(initAnswer)) != nil {
				return
			}
		}
	}
}

// connectOnce opens one connection, initializes it and closes it, ignoring
// every failure: the server may close at any point.
func connectOnce(url string) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	tr, err := Dial(ctx, url, nil)
	if err != nil {
		return
	}
	defer tr.Close()
	if tr.Send([]byte(initRequest)) != nil {
		return
	}
	got := make(chan error, 1)
	go func() { _, err := tr.Recv(); got <- err }()
	select {
	case <-got:
	case <-ctx.Done():
		_ = tr.Close()
		<-got
	}
}

// TestServerCloseWaitsForTheAcceptFunc closes the Server while its
// AcceptFunc is still running for a new connection, over both transports.
// An AcceptFunc that returns once Close has closed its transport has
// returned before Close does, and its transport serves nothing after; one
// that does not return holds Close for closeWait, no less, and then Close
// returns anyway. A WebSocket's HTTP connection was hijacked, so only the
// Server's own wait holds Close for it.
func TestServerCloseWaitsForTheAcceptFunc(t *testing.T) {
	for _, scheme := range []string{"ws", "http"} {
		t.Run(scheme+", an AcceptFunc that returns once its transport is closed", func(t *testing.T) {
			t.Parallel()
			entered, returned := make(chan struct{}), make(chan struct{})
			srv := NewServer(func(tr acprpc.Transport, _ *http.Request) {
				defer close(returned)
				close(entered)
				for { // until Close closes it
					if _, err := tr.Recv(); err != nil {
						return
					}
				}
			}, nil)
			connected := connectInBackground(scheme + serveOnLoopback(t, srv))
			<-entered
			require.NoError(t, srv.Close())
			select {
			case <-returned:
			default:
				t.Fatal("Close returned while the AcceptFunc was still running")
			}
			assert.Zero(t, srv.Connections())
			<-connected
		})
		t.Run(scheme+", an AcceptFunc that does not return", func(t *testing.T) {
			t.Parallel()
			entered, closed := make(chan acprpc.Transport, 1), make(chan struct{})
			srv := NewServer(func(tr acprpc.Transport, _ *http.Request) {
				entered <- tr
				select { // the test's bound, far beyond closeWait
				case <-closed:
				case <-time.After(wait):
				}
			}, nil)
			connected := connectInBackground(scheme + serveOnLoopback(t, srv))
			tr := <-entered
			start := time.Now()
			require.NoError(t, srv.Close())
			elapsed := time.Since(start)
			close(closed)
			assert.GreaterOrEqual(t, elapsed, closeWait, "Close waited for the connection being opened")
			<-connected
			assert.Error(t, tr.Send([]byte(initAnswer)), "a connection closed under its AcceptFunc serves nothing")
		})
	}
}

// connectInBackground opens one connection to url with connectOnce, and
// returns a channel closed once that client has given up.
func connectInBackground(url string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		connectOnce(url)
	}()
	return done
}
