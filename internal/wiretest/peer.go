package wiretest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpkit/acprpc"
)

// Peer is a scripted raw peer: the test writes the exact bytes the Conn
// reads and reads, line by line, what the Conn wrote. The Peer reads only
// while the test waits for a line (one line of look-ahead), so a test that
// stops asking is a peer that has stopped reading. Every line it hands the
// test is in its Ledger, as a line that went AtoB (A is the Conn).
type Peer struct {
	t      testing.TB
	end    io.ReadWriteCloser
	ledger Ledger
	tap    *Tap         // Connect's, when Tapped
	conn   *acprpc.Conn // Connect's

	start  sync.Once
	lines  chan lineOrErr
	eof    chan struct{} // closed once the input has ended and every line was taken
	stop   chan struct{} // closed by Close
	reader sync.WaitGroup
	closed sync.Once
	rerr   error // why the input ended; read after eof is closed
}

type lineOrErr struct {
	msg Msg
	err error
}

// newPeer returns a Peer over end; the test's cleanup closes it.
func newPeer(t testing.TB, end io.ReadWriteCloser) *Peer {
	p := &Peer{
		t:     t,
		end:   end,
		lines: make(chan lineOrErr),
		eof:   make(chan struct{}),
		stop:  make(chan struct{}),
	}
	t.Cleanup(p.Close)
	return p
}

// Tap is the Tap on the Conn's transport of a Conn connected Tapped; it
// fails the test for one connected without.
func (p *Peer) Tap() *Tap {
	p.t.Helper()
	if p.tap == nil {
		p.t.Fatal("wiretest: Peer.Tap of a Conn connected without Tapped")
	}
	return p.tap
}

func (p *Peer) read() {
	defer p.reader.Done()
	defer close(p.eof)
	br := bufio.NewReaderSize(p.end, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			var le lineOrErr
			if !strings.HasSuffix(line, "\n") {
				le.err = fmt.Errorf("a line without its newline: %q", line)
			}
			le.msg, le.err = parseLine(strings.TrimSuffix(line, "\n"), le.err)
			select {
			case p.lines <- le:
			case <-p.stop:
				return
			}
		}
		if err != nil {
			p.rerr = err
			return
		}
	}
}

func parseLine(line string, prior error) (Msg, error) {
	m, err := Parse(line)
	if prior != nil {
		return m, prior
	}
	return m, err
}

// Next returns the next line the Conn wrote. It returns io.EOF once the
// Conn's output has ended, and ctx's error if ctx ends first.
func (p *Peer) Next(ctx context.Context) (Msg, error) {
	p.start.Do(func() {
		p.reader.Add(1)
		go p.read()
	})
	select {
	case le := <-p.lines:
		return p.took(le)
	case <-p.eof:
		select {
		case le := <-p.lines:
			return p.took(le)
		default:
		}
		if p.rerr == nil || errors.Is(p.rerr, io.ErrClosedPipe) {
			return Msg{}, io.EOF
		}
		return Msg{}, p.rerr
	case <-ctx.Done():
		return Msg{}, fmt.Errorf("waiting for a line: %w", ctx.Err())
	}
}

// took records a line handed to the test.
func (p *Peer) took(le lineOrErr) (Msg, error) {
	p.ledger.Record(AtoB, []byte(le.msg.Raw))
	return le.msg, le.err
}

// Ledger is the record of the lines the Peer has handed the test.
func (p *Peer) Ledger() *Ledger { return &p.ledger }

// Expect returns the next line, failing the test if there is none.
func (p *Peer) Expect(ctx context.Context) Msg {
	p.t.Helper()
	m, err := p.Next(ctx)
	if err != nil {
		p.t.Fatalf("wiretest: expected a line: %v", err)
	}
	return m
}

// ExpectAnswer returns the next line, which must be the answer for id, given
// as its exact JSON text.
func (p *Peer) ExpectAnswer(ctx context.Context, id string) Msg {
	p.t.Helper()
	m := p.Expect(ctx)
	if !m.IsResponse() || string(m.ID) != id {
		p.t.Fatalf("wiretest: expected the answer for id %s, got %s", id, m.Raw)
	}
	return m
}

// ExpectResult checks that the next line answers id with a result equal to
// want, compared as JSON.
func (p *Peer) ExpectResult(ctx context.Context, id, want string) Msg {
	p.t.Helper()
	m := p.ExpectAnswer(ctx, id)
	if m.Error != nil {
		p.t.Fatalf("wiretest: expected result %s for id %s, got %s", want, id, m.Raw)
	}
	if !jsonEqual(want, string(m.Result)) {
		p.t.Fatalf("wiretest: id %s: expected result %s, got %s", id, want, m.Raw)
	}
	return m
}

// ExpectError checks that the next line answers id with an error of code.
func (p *Peer) ExpectError(ctx context.Context, id string, code int64) Msg {
	p.t.Helper()
	m := p.ExpectAnswer(ctx, id)
	if m.Error == nil || m.Error.Code != code {
		p.t.Fatalf("wiretest: expected error %d for id %s, got %s", code, id, m.Raw)
	}
	return m
}

// ExpectNotification checks that the next line is a notification of method.
func (p *Peer) ExpectNotification(ctx context.Context, method string) Msg {
	p.t.Helper()
	return p.expectMethod(ctx, "notification", Msg.IsNotification, method)
}

// ExpectRequest checks that the next line is a request of method.
func (p *Peer) ExpectRequest(ctx context.Context, method string) Msg {
	p.t.Helper()
	return p.expectMethod(ctx, "request", Msg.IsRequest, method)
}

// expectMethod checks that the next line is a kind of message of method.
func (p *Peer) expectMethod(ctx context.Context, kind string, is func(Msg) bool, method string) Msg {
	p.t.Helper()
	m := p.Expect(ctx)
	if !is(m) || m.Method != method {
		p.t.Fatalf("wiretest: expected %s %s, got %s", kind, method, m.Raw)
	}
	return m
}

// ExpectN returns the next n lines, for messages whose order is not defined.
func (p *Peer) ExpectN(ctx context.Context, n int) []Msg {
	p.t.Helper()
	out := make([]Msg, 0, n)
	for range n {
		out = append(out, p.Expect(ctx))
	}
	return out
}

// ExpectByID returns the next n lines by their ID's exact text, for
// answers whose order is not defined.
func (p *Peer) ExpectByID(ctx context.Context, n int) map[string]Msg {
	p.t.Helper()
	out := make(map[string]Msg, n)
	for _, m := range p.ExpectN(ctx, n) {
		out[string(m.ID)] = m
	}
	return out
}

// Rest reads until the Conn's output ends and returns what came; use it
// after closing the Conn to check that nothing else was sent.
func (p *Peer) Rest(ctx context.Context) []Msg {
	p.t.Helper()
	var out []Msg
	for {
		m, err := p.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			p.t.Fatalf("wiretest: reading to the end: %v (so far %v)", err, out)
		}
		out = append(out, m)
	}
}

// RestAnswers reads until the Conn's output ends and returns each line by
// its ID's exact text, failing the test on a line that is not an answer or
// on a second answer for one ID.
func (p *Peer) RestAnswers(ctx context.Context) map[string]Msg {
	p.t.Helper()
	got := map[string]Msg{}
	for _, m := range p.Rest(ctx) {
		if !m.IsResponse() {
			p.t.Fatalf("wiretest: not an answer: %s", m.Raw)
		}
		if _, twice := got[string(m.ID)]; twice {
			p.t.Fatalf("wiretest: request %s answered twice", m.ID)
		}
		got[string(m.ID)] = m
	}
	return got
}

// Drain reads and drops everything the Conn writes from now on, as a peer
// that reads but does not look, and returns a channel closed once the
// Conn's output has ended. Use a Tap to see what was written.
func (p *Peer) Drain() <-chan struct{} {
	lineMode := true
	p.start.Do(func() {
		lineMode = false
		p.reader.Add(1)
		go func() {
			defer p.reader.Done()
			defer close(p.eof)
			_, p.rerr = io.Copy(io.Discard, p.end)
		}()
	})
	if lineMode {
		p.reader.Add(1)
		go func() {
			defer p.reader.Done()
			for {
				select {
				case <-p.lines:
				case <-p.eof:
					return
				case <-p.stop:
					return
				}
			}
		}()
	}
	return p.eof
}

// Send writes line and a "\n" in one write.
func (p *Peer) Send(line string) {
	p.t.Helper()
	if err := p.TrySend(line + "\n"); err != nil {
		p.t.Fatalf("wiretest: send %q: %v", line, err)
	}
}

// SendRaw writes s exactly, in one write.
func (p *Peer) SendRaw(s string) {
	p.t.Helper()
	if err := p.TrySend(s); err != nil {
		p.t.Fatalf("wiretest: send %q: %v", s, err)
	}
}

// SendAsync writes b exactly, in one write, on a goroutine of its own, for
// a write the Conn may not take for a while, and reports the write's error.
func (p *Peer) SendAsync(b []byte) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := p.end.Write(b)
		done <- err
	}()
	return done
}

// TrySend writes s exactly and returns the write's error.
func (p *Peer) TrySend(s string) error {
	_, err := io.WriteString(p.end, s)
	return err
}

// Request sends a request; id and params are JSON text (params "" for none).
func (p *Peer) Request(id, method, params string) {
	p.t.Helper()
	p.Send(RequestLine(id, method, params))
}

// Notify sends a notification; params is JSON text ("" for none).
func (p *Peer) Notify(method, params string) { p.t.Helper(); p.Send(notificationLine(method, params)) }

// Cancel sends $/cancel_request for id, given as JSON text.
func (p *Peer) Cancel(id string) { p.t.Helper(); p.Send(CancelLine(id)) }

// Respond answers id with result, both JSON text.
func (p *Peer) Respond(id, result string) { p.t.Helper(); p.Send(resultLine(id, result)) }

// RespondError answers id with an error.
func (p *Peer) RespondError(id string, code int64, message string) {
	p.t.Helper()
	p.Send(errorLine(id, code, message))
}

// CloseWrite ends the Conn's input, as a peer that exits does; over an end
// that cannot close only its writing half, the whole end closes.
func (p *Peer) CloseWrite() {
	closeWrite := p.end.Close
	if hc, ok := p.end.(halfCloser); ok {
		closeWrite = hc.CloseWrite
	}
	if err := closeWrite(); err != nil {
		p.t.Errorf("wiretest: close write: %v", err)
	}
}

// Settle closes the Conn Connect made and waits until every request it served has been
// answered or its answer dropped, which is after its handler returned: once
// Close has returned nothing new is served, and a request leaves the
// in-flight table only when its handler's return has been dealt with. So
// what the handlers recorded, and what the Conn wrote for them, is final.
// The Conn offers nothing to wake on here, so the table is polled.
func (p *Peer) Settle(ctx context.Context) {
	t, c := p.t, p.conn
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("wiretest: close: %v", err)
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for c.Stats().IncomingInFlight > 0 {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("wiretest: handlers did not return after Close: %d still in flight: %v",
				c.Stats().IncomingInFlight, stalled(ctx))
		}
	}
}

// Close closes the peer's end and waits for its reader.
func (p *Peer) Close() {
	p.closed.Do(func() {
		close(p.stop)
		_ = p.end.Close()
		p.reader.Wait()
	})
}
