package remote

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/internal/wiretest"
)

// numbered is the nth message of a test's server, as a notification.
func numbered(n int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"n","params":{"n":%d}}`, n)
}

// A GET whose Last-Event-ID the server cannot resume from (not a number,
// negative, beyond 64 bits, an event that was never sent) is refused with
// 400 and leaves the GET that holds the stream alone: a request that is
// refused changes nothing, and the client's stream goes on.
func TestHTTPResumeWithABadLastEventIDLeavesTheReader(t *testing.T) {
	c, id, server, events := openConnectionStream(t, nil)
	ctx := wiretest.Context(t)
	send(t, server, numbered(1))
	require.Equal(t, "1 "+numbered(1), wiretest.Recv(t, ctx, events))
	for n, bad := range []string{"abc", "-1", "+1", "1.0", "0x1", "18446744073709551616", "18446744073709551615", "99"} {
		resp, body := c.do(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream", "Last-Event-ID", bad)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "Last-Event-ID %q: %s", bad, body)
		send(t, server, numbered(n+2))
		assert.Equal(t, fmt.Sprintf("%d %s", n+2, numbered(n+2)), wiretest.Recv(t, ctx, events),
			"the stream after a refused Last-Event-ID %q", bad)
	}
	require.NoError(t, server.Close())
	for range events {
	}
}

// A GET that resumes the connection's stream after the connection closed
// (Shutdown's cancelled answer still queued, the client's stream cut just
// before) gets the events written into the cut stream after its
// Last-Event-ID, then what was queued, each with its ID: it used to get
// only what was queued, with a gap in the IDs the client could not see.
func TestHTTPResumeAfterTheCloseGetsWhatTheCutStreamLost(t *testing.T) {
	ts := startServer(t, nil)
	c := newRawHTTP(t, ts.url("http"))
	id, server := c.initialize(ts)
	get := c.open(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream")
	require.Equal(t, http.StatusOK, get.StatusCode)
	events := sseEventIDs(get)
	ctx := wiretest.Context(t)
	for n := 1; n <= 3; n++ {
		send(t, server, numbered(n))
		require.Equal(t, fmt.Sprintf("%d %s", n, numbered(n)), wiretest.Recv(t, ctx, events))
	}
	h := ts.Server.lookup(id, true)
	h.mu.Lock()
	released := h.streams[""].released
	h.mu.Unlock()
	require.NoError(t, get.Body.Close()) // the cut: the client read event 1 only
	wiretest.Recv(t, ctx, released)
	send(t, server, numbered(4))
	require.NoError(t, server.Close())

	resp := c.open(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream", "Last-Event-ID", "1")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var got []string
	for ev := range sseEventIDs(resp) {
		got = append(got, ev)
	}
	want := []string{"2 " + numbered(2), "3 " + numbered(3), "4 " + numbered(4)}
	assert.Equal(t, want, got)
}

// held is what h holds for its client: the messages queued on its streams
// and the events its connection's stream keeps for a GET that resumes it.
func held(h *httpConn) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.queued + h.streams[""].resume.bytes
}

// A client whose stream is cut again and again while the agent floods it,
// each time before it read the last quarter of what the server wrote (more
// than the server keeps for resuming before it), loses nothing,
// reads nothing twice, and makes the server hold at most MaxQueuedBytes
// and the quarter of it kept for resuming, with one message more: the
// events a resume puts back are queued beyond MaxQueuedBytes, and Send
// waits until the queue is below it again. The GETs are driven through the
// methods serveGet calls, without sockets, whose buffers would decide how
// much a cut loses.
func TestHTTPStreamCutAgainAndAgainHoldsBoundedMemory(t *testing.T) {
	const limit, n = 64 << 10, 6000
	ts := startServer(t, &Options{MaxQueuedBytes: limit})
	c := newRawHTTP(t, ts.url("http"))
	_, server := c.initialize(ts)
	h := server.(*httpConn)
	msg := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"n","params":{"n":%d,"pad":%q}}`, i, strings.Repeat("x", 100))
	}
	sent := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			if err := server.Send([]byte(msg(i))); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	ctx := wiretest.Context(t)
	last, most, cuts := 0, 0, 0
	for last < n {
		lastEventID := ""
		if last > 0 {
			lastEventID = strconv.Itoa(last)
		}
		st, err := h.attach(ctx, "", lastEventID, func(time.Time) {})
		require.NoError(t, err)
		var msgs [][]byte
		for taken := 0; taken < limit/2 && last+len(msgs) < n; {
			batch, first := h.head(st)
			if batch == nil { // the flood has not caught up
				wiretest.Recv(t, ctx, st.wake)
				continue
			}
			require.Equal(t, uint64(last+len(msgs)+1), first, "the event after the one the client read last")
			h.taken(st, len(batch)) // written
			msgs = append(msgs, batch...)
			for _, m := range batch {
				taken += len(m)
			}
		}
		read := len(msgs) - len(msgs)/4 // the client read all but the last quarter before the cut
		for _, m := range msgs[:read] {
			require.Equal(t, msg(last+1), string(m))
			last++
		}
		most = max(most, held(h))
		require.LessOrEqual(t, most, limit+limit/4+len(msg(n)), "what the server holds for the client")
		h.detach("", st)
		cuts++
	}
	require.NoError(t, <-sent)
	t.Logf("%d cuts, held at most %d bytes (MaxQueuedBytes %d)", cuts, most, limit)
	require.NoError(t, server.Close())
}

// Two GETs that resume the connection's stream in a loop, each taking it
// from the other (and from its own last) while the agent writes, never
// deadlock, and each stream they get is coherent: its first event is the
// one after its Last-Event-ID, its events follow each other, and an ID
// always carries the same message; together they read every message. A
// GET that comes while another is taking the stream over gets 409.
func TestHTTPResumingGetsFightingForTheStream(t *testing.T) {
	const n, fighters, perGet, ahead = 300, 2, 2, 4
	c, id, server, first := openConnectionStream(t, &Options{Logger: slog.New(slog.DiscardHandler)})
	ctx := wiretest.Context(t)
	var mu sync.Mutex
	seen := map[string]bool{}
	lastSeen := 0
	done := make(chan struct{})
	progress := make(chan struct{}, 1)
	note := func(ev string) {
		idText, data, _ := strings.Cut(ev, " ")
		eventID, err := strconv.Atoi(idText)
		if !assert.NoError(t, err, ev) || !assert.Equal(t, numbered(eventID), data, "event %d", eventID) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		seen[idText] = true
		if eventID > lastSeen {
			lastSeen = eventID
			select {
			case progress <- struct{}{}:
			default:
			}
			if lastSeen == n {
				close(done)
			}
		}
	}
	// read notes the events of one GET, checking that they follow from
	// after.
	var readers sync.WaitGroup
	read := func(events <-chan string, after int, took chan<- struct{}) {
		defer readers.Done()
		next := after + 1
		for ev := range events {
			assert.True(t, strings.HasPrefix(ev, strconv.Itoa(next)+" "), "event %d expected, got %s", next, ev)
			next++
			note(ev)
			if next-after == perGet+1 {
				close(took)
			}
		}
		if next-after <= perGet {
			close(took)
		}
	}
	readers.Add(1)
	go read(first, 0, make(chan struct{}))
	sent := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			for { // at most ahead events beyond those read, so that the GETs fight all along
				mu.Lock()
				behind := lastSeen < i-ahead
				mu.Unlock()
				if !behind {
					break
				}
				select {
				case <-progress:
				case <-ctx.Done():
					sent <- ctx.Err()
					return
				}
			}
			if err := server.Send([]byte(numbered(i))); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	var fighting sync.WaitGroup
	got := map[int]int{}
	for range fighters {
		fighting.Add(1)
		go func() {
			defer fighting.Done()
			for {
				select {
				case <-done:
					return
				case <-ctx.Done():
					return
				default:
				}
				mu.Lock()
				after := lastSeen
				mu.Unlock()
				resp, err := c.try(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream", "Last-Event-ID", strconv.Itoa(after))
				mu.Lock()
				if err != nil {
					// A GET on a connection the server closed as another GET
					// took the stream over: the client opens it again.
					got[0]++
					mu.Unlock()
					continue
				}
				got[resp.StatusCode]++
				mu.Unlock()
				if resp.StatusCode != http.StatusOK {
					resp.Body.Close()
					continue
				}
				took := make(chan struct{})
				readers.Add(1)
				go read(sseEventIDs(resp), after, took)
				select { // a few events, or its end, then the next GET
				case <-took:
				case <-done:
				case <-ctx.Done():
				}
			}
		}()
	}
	fighting.Wait()
	mu.Lock()
	t.Logf("GETs answered: %v; last event read %d of %d", got, lastSeen, n)
	mu.Unlock()
	require.NoError(t, <-sent)
	require.NoError(t, server.Close())
	readers.Wait()
	for s := range got {
		assert.Contains(t, []int{0, http.StatusOK, http.StatusConflict}, s, "0: no answer, the connection cut")
	}
	for i := 1; i <= n; i++ {
		assert.True(t, seen[strconv.Itoa(i)], "event %d never read", i)
	}
}

// A GET whose write of a batch of events fails part-way (a connection
// reset) notes none of them written, though the client may have read the
// first: a GET that resumes after one of those starts after it. It used to
// get 400, as would every GET after it, and the connection could not go
// on; so did a GET resuming after an event another GET had read, once a
// GET with an older Last-Event-ID had taken the stream back.
func TestHTTPResumeAfterAnEventOfABatchCutPartWay(t *testing.T) {
	ts := startServer(t, nil)
	c := newRawHTTP(t, ts.url("http"))
	_, server := c.initialize(ts)
	h := server.(*httpConn)
	ctx := wiretest.Context(t)
	for i := 1; i <= 5; i++ {
		send(t, server, numbered(i))
	}
	st, err := h.attach(ctx, "", "", func(time.Time) {})
	require.NoError(t, err)
	msgs, first := h.head(st)
	require.Len(t, msgs, 5)
	require.Equal(t, uint64(1), first)
	h.detach("", st) // the write failed: nothing taken, but the client read events 1 to 3

	st, err = h.attach(ctx, "", "3", func(time.Time) {})
	require.NoError(t, err, "a GET resuming after event 3")
	msgs, first = h.head(st)
	require.Equal(t, uint64(4), first)
	require.Equal(t, []string{numbered(4), numbered(5)}, strings.Fields(string(bytes.Join(msgs, []byte(" ")))))
	h.taken(st, len(msgs))
	h.detach("", st)

	st, err = h.attach(ctx, "", "1", func(time.Time) {}) // an older Last-Event-ID takes the stream back
	require.NoError(t, err)
	msgs, first = h.head(st)
	require.Equal(t, uint64(2), first)
	require.Equal(t, []string{numbered(2), numbered(3), numbered(4), numbered(5)}, strings.Fields(string(bytes.Join(msgs, []byte(" ")))))
	h.detach("", st)
	assert.Equal(t, 5*len(numbered(1)), held(h), "event 1 kept, 2 to 5 queued")
	require.NoError(t, server.Close())
}

// One stream is agreed on only by Acp-Single-Stream: 1 on the POST of
// initialize, and the answer says so; any other value means no, and the
// header on a later POST changes nothing.
func TestHTTPSingleStreamIsAgreedOnlyAtInitialize(t *testing.T) {
	ts := startServer(t, nil)
	c := newRawHTTP(t, ts.url("http"))
	for _, value := range []string{"1", " 1 ", "0", "true", "yes", "1, 1", "2", ""} {
		headers := []string{}
		if value != "" {
			headers = append(headers, HeaderSingleStream, value)
		}
		answer, server := c.initializeWith(ts, headers...)
		want := strings.TrimSpace(value) == "1"
		assert.Equal(t, want, server.(*httpConn).single, "Acp-Single-Stream %q", value)
		assert.Equal(t, want, answer.Get(HeaderSingleStream) == "1", "the answer to Acp-Single-Stream %q says", value)
		if !want {
			id := answer.Get(HeaderConnectionID)
			posted := make(chan *http.Response, 1)
			go func() {
				resp, _ := c.do(http.MethodPost, `{"jsonrpc":"2.0","method":"n"}`, HeaderConnectionID, id, HeaderSingleStream, "1")
				posted <- resp
			}()
			recvMsg(t, server)
			assert.Equal(t, http.StatusAccepted, (<-posted).StatusCode)
			assert.False(t, server.(*httpConn).single, "the header on a later POST")
		}
		require.NoError(t, server.Close())
	}
}

// A client that agrees on one stream and never opens it holds at most
// MaxQueuedBytes, its session's messages among them: the agent's Send
// waits, then fails once IdleTimeout closes the connection, saying why.
func TestHTTPSingleStreamNeverOpenedEndsTheAgentsSends(t *testing.T) {
	const limit = 1024
	ts := startServer(t, &Options{MaxQueuedBytes: limit, IdleTimeout: 200 * time.Millisecond, WriteTimeout: -1})
	c := newRawHTTP(t, ts.url("http"))
	_, server := c.initializeWith(ts, HeaderSingleStream, "1")
	update := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","pad":"` + strings.Repeat("x", 200) + `"}}`
	var err error
	for err == nil {
		err = server.Send([]byte(update))
	}
	require.ErrorContains(t, err, "no SSE stream open for 200ms")
	h := server.(*httpConn)
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.LessOrEqual(t, h.queued, limit+len(update))
	assert.Len(t, h.streams, 1, "no session stream: everything on the connection's")
}

// A GET that resumes a connection its client ended with DELETE gets 404:
// nothing is left to resume, and the GET that held the stream ends.
func TestHTTPResumeAfterDeleteIsNotFound(t *testing.T) {
	c, id, server, events := openConnectionStream(t, nil)
	ctx := wiretest.Context(t)
	send(t, server, numbered(1))
	require.Equal(t, "1 "+numbered(1), wiretest.Recv(t, ctx, events))
	resp, body := c.do(http.MethodDelete, "", HeaderConnectionID, id)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, body)
	for range events {
	}
	for _, last := range []string{"0", "1", "2"} {
		resp, body = c.do(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream", "Last-Event-ID", last)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, "Last-Event-ID %s: %s", last, body)
	}
	_, err := recv(t, server)
	assert.ErrorIs(t, err, io.EOF)
}
