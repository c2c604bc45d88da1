package demo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/remote"
)

// ServeAgent serves the demo agent at http://addr/acp, over WebSocket and
// Streamable HTTP alike, one Agent per connection, made by newAgent. opts
// are the remote Server's (nil for its defaults: this machine's loopback
// only). It calls ready with the endpoint's URL once it listens. When ctx
// ends it drains the server within grace (remote.Server.Shutdown: new
// connections are refused with 503, each connection's Conn shuts down
// gracefully, so what is in flight is answered as cancelled), and returns
// once every turn has ended.
func ServeAgent(ctx context.Context, addr string, opts *remote.Options, log *slog.Logger,
	newAgent func(*slog.Logger) *Agent, grace time.Duration, ready func(url string)) error {
	var open sync.WaitGroup // each connection, until its turns have ended
	srv := remote.NewServer(func(t acprpc.Transport, r *http.Request) {
		peer := log.With("peer", r.RemoteAddr, "transport", transportOf(r))
		agent := newAgent(peer)
		// Not the request's end, nor ctx's: the connection outlives the
		// one, and the server's Shutdown ends it gracefully at the other.
		conn := acprpc.NewConn(context.WithoutCancel(r.Context()), t, agent, &acprpc.Options{Logger: peer})
		remote.OnShutdown(t, conn.Shutdown)
		peer.Info("connection opened")
		open.Go(func() {
			<-conn.Done()
			peer.Info("connection closed", "reason", conn.Err())
			conn.Close()
			agent.Wait()
		})
	}, opts)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	url := "http://" + l.Addr().String() + remote.DefaultPath
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	ready(url)
	<-ctx.Done()

	log.Info("shutting down: new connections are refused, every request in flight is answered as cancelled")
	shutdown, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err = srv.Shutdown(shutdown)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	open.Wait()
	return err
}

func transportOf(r *http.Request) string {
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return "websocket"
	}
	return "streamable-http"
}

// Remote is a client's conversation with an agent served at URL (ws://,
// wss://, http:// or https://).
type Remote struct {
	URL string
	// Recorder, if set, records the wire through the client's hooks.
	Recorder *Recorder
	// Log receives the client connection's diagnostics; nil discards them.
	Log *slog.Logger
	// Interrupt, when it is closed during the turn, shuts the connection
	// down gracefully: see ShutdownOn.
	Interrupt <-chan struct{}
}

// Run connects to the agent, runs one turn with client, and closes the
// connection.
func (s *Remote) Run(ctx context.Context, client *Client, t Turn) (TurnResult, error) {
	tr, err := remote.Dial(ctx, s.URL, nil)
	if err != nil {
		return TurnResult{}, err
	}
	opts := &acprpc.Options{Logger: s.Log}
	if s.Recorder != nil {
		opts.Hooks = s.Recorder.Hooks()
	}
	conn := acprpc.NewConn(ctx, tr, client, opts)
	interrupted := ShutdownOn(s.Interrupt, conn)
	res, err := client.RunTurn(ctx, conn, t)
	interrupted()
	conn.Close()
	client.Wait()
	return res, err
}

// StartListeningAgent starts the agent binary with -listen on a free
// loopback port and returns it with the URL it serves, which it prints as
// its first line of output. Stop it with Stop.
func StartListeningAgent(path string, stderr io.Writer, args ...string) (*AgentProcess, string, error) {
	p, err := StartAgent(path, stderr, append([]string{"-listen", "127.0.0.1:0"}, args...)...)
	if err != nil {
		return nil, "", err
	}
	line, err := bufio.NewReader(p.Stdout).ReadString('\n')
	if err != nil {
		p.Kill()
		_ = p.Wait()
		return nil, "", fmt.Errorf("the agent did not say where it listens: %w", err)
	}
	return p, strings.TrimSpace(line), nil
}

// Stop interrupts a listening agent and waits for it to exit, which must be
// with status 0.
func (p *AgentProcess) Stop() error {
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		p.Kill()
	}
	return p.Wait()
}

// Signal sends the agent a signal, such as os.Interrupt.
func (p *AgentProcess) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }
