package remote

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpkit/acprpc"
)

// maxErrorBody is how much of a refused request's body is kept for the
// error answer.
const maxErrorBody = 8 << 10

// maxEmptyReopens is how many times in a row a stream may end without
// delivering anything and be opened again before the transport gives up.
const maxEmptyReopens = 3

// quickEnd is how soon a stream must end, without delivering anything, to
// count among maxEmptyReopens: the count stops a server that ends the
// stream at once, again and again; a stream that a proxy's idle timeout ends
// (one shorter than the server's keep-alive) lived that long and is opened
// again, however often. A variable, for the tests.
var quickEnd = closeWait

// httpClient is the client's side of a Streamable HTTP connection, as an
// acprpc.Transport. Send POSTs each message; the first, initialize, opens
// the connection, and its answer comes in the POST's response. Recv
// returns the messages of the connection's SSE stream and of one stream per
// session, each read by a goroutine of its own and opened before the first
// message for its session is posted (or as soon as the answer to one of
// its own calls names a new session: answers to no call of its own open
// nothing), so that nothing the server sends for it waits unread. It reads
// at most DialOptions.MaxSessions session streams.
//
// It asks the server, on initialize's POST, for every message on the
// connection's stream (HeaderSingleStream), and once the answer says so,
// reads that stream alone: the messages come in the order the server's
// Conn sent them, so those sent before an answer are handled before it,
// as over stdio. Separate streams have no order between them: an update
// of a session could come after the answer that follows it on the
// connection's stream.
//
// A request the server refuses (a 413 for a message too large, a 5xx) is
// answered here, with an error whose data holds the status and body, so
// its Call returns; 401, 403, 404 and 410 mean the connection is unusable
// and close the transport.
type httpClient struct {
	url    string
	client *http.Client
	own    *http.Transport // the client's own, closed with the transport
	header http.Header
	limit  atomic.Int64

	ctx    context.Context // ends with the transport; every request runs under it
	cancel context.CancelFunc
	in     chan inbound // SSE readers → Recv
	done   chan struct{}
	reason error // set with failing, under mu
	fails  sync.Once
	closes sync.Once
	wg     sync.WaitGroup // the SSE readers

	mu       sync.Mutex
	connID   string
	local    [][]byte      // answers made here, for Recv ahead of the streams
	wake     chan struct{} // signalled when local grows
	sessions map[string]*clientStream
	answerTo map[acprpc.IDKey]string   // the key of a server request's ID → the session stream it came on
	calls    map[acprpc.IDKey]struct{} // the keys of our requests' IDs, until answered: only their answers open streams
	maxSess  int                       // the session streams this side reads at most
	single   bool                      // the server sends everything on the connection's stream
	lastID   []byte                    // the ID of the last event read on the connection's stream, for resuming it
	failing  bool                      // set once by fail: no stream is opened again
}

// clientStream is one SSE stream being read.
type clientStream struct {
	ready chan struct{} // closed once the GET is answered (or failed)
	err   error
}

func dialHTTP(u string, o DialOptions) (acprpc.Transport, error) {
	client, own := httpClientOf(o)
	t := &httpClient{
		url:      u,
		client:   client,
		own:      own,
		header:   o.Header.Clone(),
		in:       make(chan inbound),
		done:     make(chan struct{}),
		wake:     make(chan struct{}, 1),
		sessions: make(map[string]*clientStream),
		answerTo: make(map[acprpc.IDKey]string),
		calls:    make(map[acprpc.IDKey]struct{}),
		maxSess:  cmp.Or(max(o.MaxSessions, 0), DefaultMaxSessions),
	}
	max := o.MaxMessageSize
	if max <= 0 {
		max = acprpc.DefaultMaxMessageSize
	}
	t.limit.Store(int64(max))
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t, nil
}

// SetReadLimit bounds the messages the server sends.
func (t *httpClient) SetReadLimit(n int) {
	if n > 0 {
		t.limit.Store(int64(n))
	}
}

// Recv returns the next message: an answer made here first, then what the
// streams deliver.
func (t *httpClient) Recv() ([]byte, error) {
	for {
		if m := t.takeLocal(); m != nil {
			return m, nil
		}
		select {
		case m := <-t.in:
			return m.msg, m.err
		case <-t.wake:
		case <-t.done:
			if m := t.takeLocal(); m != nil {
				return m, nil
			}
			return nil, t.reason
		}
	}
}

func (t *httpClient) takeLocal() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.local) == 0 {
		return nil
	}
	m := t.local[0]
	t.local = t.local[1:]
	return m
}

// answerLocally queues a message for Recv that no stream brought: the
// answer to initialize, or an error answer for a refused request. It never
// waits, so Send cannot block on a Recv that waits for Send.
func (t *httpClient) answerLocally(m []byte) {
	t.mu.Lock()
	t.local = append(t.local, m)
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Send posts msg. The first message must be initialize.
func (t *httpClient) Send(msg []byte) error {
	select {
	case <-t.done:
		return t.reason
	default:
	}
	env := peek(msg)
	t.mu.Lock()
	connID := t.connID
	t.mu.Unlock()
	if connID == "" {
		return t.initialize(msg, env)
	}
	return t.post(msg, env, connID)
}

// initialize posts the initialize request; the answer comes in the
// response, with the connection's ID, and the connection's stream opens.
func (t *httpClient) initialize(msg []byte, env envelope) error {
	if !env.isRequest() || env.methodName() != methodInitialize {
		return errors.New("remote: the first message over Streamable HTTP must be initialize")
	}
	resp, err := t.do(http.MethodPost, msg, http.Header{HeaderSingleStream: {"1"}})
	if err != nil {
		t.fail(err)
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.refused(env, resp)
		t.fail(fmt.Errorf("remote: initialize refused: %s", resp.Status))
		return nil
	}
	id := resp.Header.Get(HeaderConnectionID)
	if id == "" {
		err := fmt.Errorf("remote: the answer to initialize has no %s", HeaderConnectionID)
		t.fail(err)
		return err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, t.limit.Load()+1))
	if err != nil {
		t.fail(err)
		return err
	}
	t.mu.Lock()
	t.connID = id
	t.single = resp.Header.Get(HeaderSingleStream) == "1"
	t.mu.Unlock()
	t.answerLocally(body)
	t.open("")
	return nil
}

// post posts a message of the open connection, with the session header
// when it belongs to a session, whose stream is opened first.
func (t *httpClient) post(msg []byte, env envelope, connID string) error {
	session := env.sessionID()
	if key, ok := env.answeredKey(); ok {
		t.mu.Lock()
		session = t.answerTo[key]
		delete(t.answerTo, key)
		t.mu.Unlock()
	}
	if session != "" {
		if err := t.open(session); err != nil {
			return err
		}
	}
	h := http.Header{HeaderConnectionID: {connID}}
	if session != "" {
		h.Set(HeaderSessionID, session)
	}
	if key, ok := env.answerKey(); ok && env.isRequest() {
		t.mu.Lock()
		t.calls[key] = struct{}{} // before the POST: the answer may come first
		t.mu.Unlock()
	}
	resp, err := t.do(http.MethodPost, msg, h)
	if err != nil {
		t.fail(err)
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode/100 == 2:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	case isConnectionGone(resp.StatusCode):
		t.fail(fmt.Errorf("remote: the server refused the connection: %s", resp.Status))
	case !env.answerID().IsZero():
		t.refused(env, resp)
	default:
		t.fail(fmt.Errorf("remote: the server refused a message: %s", resp.Status))
	}
	return nil
}

// isConnectionGone reports whether a status means the connection cannot
// be used any more: credentials refused, or the connection unknown.
func isConnectionGone(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusGone:
		return true
	}
	return false
}

// refused answers a request the server did not take with an error that
// carries the HTTP status and body.
func (t *httpClient) refused(env envelope, resp *http.Response) {
	if key, ok := env.answerKey(); ok {
		t.mu.Lock()
		delete(t.calls, key)
		t.mu.Unlock()
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	answer, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      env.answerID(),
		"error": map[string]any{
			"code":    acprpc.CodeInternalError,
			"message": "HTTP " + resp.Status,
			"data":    map[string]any{"status": resp.StatusCode, "body": string(bytes.TrimSpace(body))},
		},
	})
	t.answerLocally(answer)
}

// open starts reading the stream of session ("" for the connection's) if
// no one does, and waits until its GET is answered.
func (t *httpClient) open(session string) error {
	t.mu.Lock()
	st, err := t.startStream(session)
	t.mu.Unlock()
	if err != nil {
		t.fail(err)
		return err
	}
	select {
	case <-st.ready:
		return st.err
	case <-t.done:
		return t.reason
	}
}

// openSoon starts reading the stream of a session that the answer to one
// of our calls just named, without waiting for it.
func (t *httpClient) openSoon(session string) {
	t.mu.Lock()
	_, err := t.startStream(session)
	t.mu.Unlock()
	if err != nil {
		t.fail(err)
	}
}

// startStream starts reading the stream of session unless it is read
// already, up to maxSess session streams: a server that names more
// sessions than that fails the transport. A session's stream is the
// connection's when the server sends everything there. Called with t.mu
// held.
func (t *httpClient) startStream(session string) (*clientStream, error) {
	if t.single {
		session = ""
	}
	if st := t.sessions[session]; st != nil {
		return st, nil
	}
	if t.closing() {
		return nil, t.ctx.Err()
	}
	if t.failing {
		// endAfterStreams may be waiting on wg already: no Add after that.
		return nil, t.reason
	}
	if session != "" && len(t.sessions)-1 >= t.maxSess {
		return nil, fmt.Errorf("remote: more than %d session streams on the connection", t.maxSess)
	}
	st := &clientStream{ready: make(chan struct{})}
	t.sessions[session] = st
	t.wg.Add(1)
	go t.read(session, st)
	return st, nil
}

// read reads one stream until the transport ends. A stream the server
// ends is opened again; one that the server refuses, or that ends again
// and again without a message, each time within quickEnd, fails the
// transport.
func (t *httpClient) read(session string, st *clientStream) {
	defer t.wg.Done()
	empty := 0
	for first := true; ; first = false {
		opened := time.Now()
		resp, err := t.get(session, !first)
		if first {
			st.err = err
			close(st.ready)
		}
		if err != nil {
			t.fail(err)
			return
		}
		delivered, err := t.deliver(session, resp.Body)
		resp.Body.Close()
		if t.closing() || t.hasFailed() {
			return
		}
		if delivered || time.Since(opened) >= quickEnd {
			empty = 0
		} else if empty++; empty >= maxEmptyReopens {
			t.fail(fmt.Errorf("remote: the server keeps ending the SSE stream: %v", err))
			return
		}
	}
}

// get opens the stream of session, or opens it again: the connection's
// resumes after the last event read (resume.go), when the server numbers
// its events or said it sends everything there.
func (t *httpClient) get(session string, again bool) (*http.Response, error) {
	t.mu.Lock()
	h := http.Header{HeaderConnectionID: {t.connID}, "Accept": {"text/event-stream"}}
	switch {
	case session != "":
		h.Set(HeaderSessionID, session)
	case len(t.lastID) > 0:
		h.Set("Last-Event-ID", string(t.lastID))
	case again && t.single:
		h.Set("Last-Event-ID", "0") // nothing read yet: everything written since the stream opened
	}
	t.mu.Unlock()
	resp, err := t.do(http.MethodGet, nil, h)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		if isConnectionGone(resp.StatusCode) {
			return nil, fmt.Errorf("%w: the server closed it (%s)", io.EOF, resp.Status)
		}
		return nil, fmt.Errorf("remote: SSE stream refused: %s", resp.Status)
	}
	return resp, nil
}

// deliver hands Recv the messages of one stream's response until it ends,
// and reports whether there was any.
func (t *httpClient) deliver(session string, body io.Reader) (bool, error) {
	events := newSSEReader(body, int(t.limit.Load()))
	delivered := false
	for {
		msg, err := events.next()
		var tooLarge *acprpc.MessageTooLargeError
		if errors.As(err, &tooLarge) {
			// Dropped as it was read; the Conn fails the call it answers.
			if !t.hand(inbound{err: tooLarge}) {
				return delivered, t.ctx.Err()
			}
			t.readUpTo(session, events.lastID)
			continue
		}
		if err != nil {
			return delivered, err
		}
		env := peek(msg)
		if key, ok := env.answerKey(); session != "" && ok {
			t.mu.Lock()
			t.answerTo[key] = session
			t.mu.Unlock()
		}
		if own := t.answersOurCall(env); own && env.resultSessionID() != "" {
			t.openSoon(env.resultSessionID())
		}
		if !t.hand(inbound{msg: msg}) {
			return delivered, t.ctx.Err()
		}
		t.readUpTo(session, events.lastID)
		delivered = true
	}
}

// readUpTo notes the ID of the last event of the connection's stream that
// Recv took, after which a GET that opens it again resumes it.
func (t *httpClient) readUpTo(session string, id []byte) {
	if session != "" || len(id) == 0 {
		return
	}
	t.mu.Lock()
	t.lastID = append(t.lastID[:0], id...)
	t.mu.Unlock()
}

// answersOurCall reports whether msg answers a call of ours still
// waiting, and forgets that call: only such an answer may open a
// session's stream, never one the server made up.
func (t *httpClient) answersOurCall(env envelope) bool {
	key, ok := env.answeredKey()
	if !ok {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ours := t.calls[key]
	delete(t.calls, key)
	return ours
}

// inbound is what a stream hands Recv: a message, or one dropped for its
// size.
type inbound struct {
	msg []byte
	err error
}

// hand gives Recv m, or reports false when the transport closed first.
func (t *httpClient) hand(m inbound) bool {
	select {
	case t.in <- m:
		return true
	case <-t.ctx.Done():
		return false
	}
}

// do makes one request under the transport's context.
func (t *httpClient) do(method string, body []byte, h http.Header) (*http.Response, error) {
	return t.doContext(t.ctx, method, body, h)
}

func (t *httpClient) doContext(ctx context.Context, method string, body []byte, h http.Header) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.url, r)
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	for k, v := range t.header {
		req.Header[k] = v
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("remote: %s %s: %w", method, t.url, err)
	}
	return resp, nil
}

// fail ends the transport for reason, which Recv and Send return once
// every answer made here has been read.
func (t *httpClient) fail(reason error) {
	t.fails.Do(func() {
		t.mu.Lock()
		t.reason = reason
		t.failing = true
		t.mu.Unlock()
		go t.endAfterStreams()
	})
}

// endAfterStreams ends Recv once every stream has delivered what it still
// had: when the server goes, one stream can end while another still holds
// the answers it wrote before it closed (a shutdown's cancelled answers),
// and Recv must not report the end ahead of them. A stream the server keeps
// open is waited for at most closeWait.
func (t *httpClient) endAfterStreams() {
	streams := make(chan struct{})
	go func() {
		t.wg.Wait()
		close(streams)
	}()
	wait := time.NewTimer(closeWait)
	defer wait.Stop()
	select {
	case <-streams:
	case <-wait.C:
	case <-t.ctx.Done():
	}
	close(t.done)
}

// hasFailed reports whether the transport is ending, so that no stream is
// opened again.
func (t *httpClient) hasFailed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failing
}

func (t *httpClient) closing() bool { return t.ctx.Err() != nil }

// Close ends the connection: the streams stop, and the server is told with
// DELETE (waiting at most about a second for it).
func (t *httpClient) Close() error {
	t.closes.Do(func() {
		t.fail(io.EOF)
		t.cancel()
		t.wg.Wait()
		t.mu.Lock()
		id := t.connID
		t.mu.Unlock()
		if id != "" {
			ctx, cancel := context.WithTimeout(context.Background(), closeWait)
			if resp, err := t.doContext(ctx, http.MethodDelete, nil, http.Header{HeaderConnectionID: {id}}); err == nil {
				resp.Body.Close()
			}
			cancel()
		}
		if t.own != nil {
			t.own.CloseIdleConnections()
		}
	})
	return nil
}

var _ acprpc.Transport = (*httpClient)(nil)
