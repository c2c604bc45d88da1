package remotebench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// NewHTTPClient returns the HTTP client every Streamable HTTP connection of
// one load generator shares, for the POST of initialize, the SSE streams
// and DELETE (the other POSTs go on each connection's own, postConn): idle
// connections kept, as many as the connections need, for 4 s (less than a
// server's own keep-alive timeout, Node's 5 s, which could close one under
// a POST).
func NewHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         dialTCP,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: 1 << 14,
		IdleConnTimeout:     4 * time.Second,
		DisableCompression:  true,
	}}
}

// ReceiveBuffer, when above zero, is the receive buffer (SO_RCVBUF) of the
// client's sockets, fixed as a pipe's is. Otherwise the kernel's grows
// while the client reads fast, to megabytes on loopback, and then holds
// that much of the agent's stream ahead of a slow reader's cancel: the
// client's own memory, which no agent can bound.
var ReceiveBuffer int

// dialTCP dials a socket of the client, with ReceiveBuffer.
func dialTCP(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err == nil && ReceiveBuffer > 0 {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(ReceiveBuffer)
		}
	}
	return c, err
}

// httpWire is a Streamable HTTP connection: each client message a POST,
// the server's messages read from the connection's SSE stream until the
// session opens, then from the session's.
type httpWire struct {
	hc      *http.Client
	url     string
	id      string // Acp-Connection-Id
	session string // Acp-Session-Id, once opened
	initial []byte // initialize's answer, read first
	conn    *sseStream
	sess    *sseStream
	posts   *postConn // the POSTs after initialize's
}

// dialHTTP opens a Streamable HTTP connection with the POST of initialize
// and its connection's SSE stream.
func dialHTTP(ctx context.Context, hc *http.Client, url string, initialize []byte) (*httpWire, error) {
	w := &httpWire{hc: hc, url: url}
	res, err := w.post(ctx, initialize)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, statusError("initialize", res)
	}
	if w.id = res.Header.Get("Acp-Connection-Id"); w.id == "" {
		return nil, fmt.Errorf("remotebench: initialize answered without Acp-Connection-Id")
	}
	if w.initial, err = io.ReadAll(res.Body); err != nil {
		return nil, err
	}
	if w.conn, err = w.stream(ctx, ""); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *httpWire) post(ctx context.Context, msg []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(msg))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if w.id != "" {
		req.Header.Set("Acp-Connection-Id", w.id)
	}
	if w.session != "" {
		req.Header.Set("Acp-Session-Id", w.session)
	}
	return w.hc.Do(req)
}

// send POSTs msg on the connection's own keep-alive TCP connection,
// written and read on the caller's goroutine: an http.Client would hand
// each request to goroutines of its own, costs of the generator that
// would weigh on a Streamable HTTP turn and not on a WebSocket one. A
// request on a reused connection that the server closed meanwhile (Node
// closes one idle for 5 s) got no byte of an answer and is sent again on
// a new one.
func (w *httpWire) send(ctx context.Context, msg []byte) error {
	for {
		reused := w.posts != nil
		if !reused {
			var err error
			if w.posts, err = dialPosts(ctx, w.url); err != nil {
				return err
			}
		}
		status, answered, err := w.posts.post(w.id, w.session, msg)
		if err == nil && status != http.StatusAccepted {
			err = fmt.Errorf("remotebench: POST answered %d", status)
		}
		if err == nil {
			return nil
		}
		w.posts.close()
		w.posts = nil
		if answered || !reused {
			return err
		}
	}
}

// postConn is a keep-alive HTTP/1.1 connection for one Streamable HTTP
// connection's POSTs.
type postConn struct {
	c    net.Conn
	r    *bufio.Reader
	host string
	path string
	req  []byte // the request being written, its array kept
	done bool   // the server said it closes the connection
}

func dialPosts(ctx context.Context, rawURL string) (*postConn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	c, err := dialTCP(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	return &postConn{c: c, r: bufio.NewReaderSize(c, 4<<10), host: u.Host, path: u.RequestURI()}, nil
}

// post sends one POST and reads its answer whole; answered says whether
// any of the answer came.
func (p *postConn) post(connID, session string, body []byte) (status int, answered bool, err error) {
	if p.done {
		return 0, false, io.EOF
	}
	b := append(p.req[:0], "POST "...)
	b = append(b, p.path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, p.host...)
	b = append(b, "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAcp-Connection-Id: "...)
	b = append(b, connID...)
	if session != "" {
		b = append(b, "\r\nAcp-Session-Id: "...)
		b = append(b, session...)
	}
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	b = append(b, body...)
	p.req = b
	if _, err := p.c.Write(b); err != nil {
		return 0, false, err
	}
	if _, err := p.r.Peek(1); err != nil {
		return 0, false, err
	}
	res, err := http.ReadResponse(p.r, nil)
	if err != nil {
		return 0, true, err
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	p.done = res.Close
	return res.StatusCode, true, err
}

func (p *postConn) close() { _ = p.c.Close() }

func (w *httpWire) recv() ([]byte, error) {
	if w.initial != nil {
		m := w.initial
		w.initial = nil
		return m, nil
	}
	if w.sess != nil {
		return w.sess.next()
	}
	return w.conn.next()
}

func (w *httpWire) opened(ctx context.Context, session string) error {
	w.session = session
	s, err := w.stream(ctx, session)
	w.sess = s
	return err
}

// stream opens the SSE stream of session ("" for the connection's).
func (w *httpWire) stream(ctx context.Context, session string) (*sseStream, error) {
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodGet, w.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Acp-Connection-Id", w.id)
	if session != "" {
		req.Header.Set("Acp-Session-Id", session)
	}
	res, err := w.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		defer res.Body.Close()
		return nil, statusError("GET", res)
	}
	return &sseStream{body: res.Body, r: bufio.NewReaderSize(res.Body, 4<<10)}, nil
}

func (w *httpWire) close() error {
	req, err := http.NewRequest(http.MethodDelete, w.url, nil)
	if err == nil {
		req.Header.Set("Acp-Connection-Id", w.id)
		var res *http.Response
		if res, err = w.hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}
	if w.posts != nil {
		w.posts.close()
	}
	for _, s := range []*sseStream{w.conn, w.sess} {
		if s != nil {
			s.body.Close()
		}
	}
	return err
}

func statusError(what string, res *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	return fmt.Errorf("remotebench: %s answered %s: %s", what, res.Status, bytes.TrimSpace(body))
}

// sseStream reads the events of one SSE stream: each event's data lines,
// joined; comments (the keep-alives) and other fields are skipped.
type sseStream struct {
	body io.ReadCloser
	r    *bufio.Reader
}

func (s *sseStream) next() ([]byte, error) {
	var data []byte
	for {
		line, err := s.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer: gather it whole.
			rest, err2 := s.r.ReadBytes('\n')
			line, err = append(append([]byte(nil), line...), rest...), err2
		}
		if err != nil {
			return nil, fmt.Errorf("remotebench: SSE stream: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if data != nil {
				return data, nil
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(line[len("data:"):], []byte(" "))...)
		}
	}
}
