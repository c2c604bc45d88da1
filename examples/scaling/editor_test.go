package scaling

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/examples/internal/demo"
	"github.com/acpkit/acprpc/remote"
)

// editor is one client of the agent, as an editor connects: its own
// connection over one transport, one session, one turn at a time. It
// answers the agent's two requests of a turn (permission, terminal) only
// when they are cancelled, as the demo's user never answers.
type editor struct {
	kind    string // "ws" or "http"
	conn    *acprpc.Conn
	session string
	replica string // which replica served it, from the balancer's Acp-Replica header

	mu   sync.Mutex
	now  *turn           // the turn in flight
	hold <-chan struct{} // while open, a cancelled request waits before its answer
}

// via is the HTTP side of an editor's transport: every request names the
// balancer's public name as its Host, and the replica that answered is
// noted.
type via struct {
	base    http.RoundTripper
	mu      sync.Mutex
	replica string
}

func (v *via) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Host = publicName
	resp, err := v.base.RoundTrip(r)
	if err == nil {
		if name := resp.Header.Get("Acp-Replica"); name != "" {
			v.mu.Lock()
			v.replica = name
			v.mu.Unlock()
		}
	}
	return resp, err
}

// connect opens an editor's connection to url (http://…/acp) over kind,
// and its session.
func connect(ctx context.Context, base http.RoundTripper, url, kind string) (*editor, error) {
	if kind == "ws" {
		url = "ws" + strings.TrimPrefix(url, "http")
	}
	v := &via{base: base}
	tr, err := remote.Dial(ctx, url, &remote.DialOptions{HTTPClient: &http.Client{Transport: v}})
	if err != nil {
		return nil, err
	}
	e := &editor{kind: kind}
	e.conn = acprpc.NewConn(context.Background(), tr, acprpc.HandlerFunc(e.handle), nil)
	err = e.conn.Call(ctx, acpv1.MethodInitialize, acpv1.InitializeRequest{
		ProtocolVersion: demo.ProtocolV1, ClientCapabilities: acpv1.ClientCapabilities{Terminal: true},
	}, nil)
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err == nil {
		err = e.conn.Call(ctx, acpv1.MethodSessionNew, map[string]any{"cwd": "/", "mcpServers": []any{}}, &sess)
	}
	if err != nil {
		e.conn.Close()
		return nil, err
	}
	e.session = sess.SessionID
	v.mu.Lock()
	e.replica = v.replica
	v.mu.Unlock()
	return e, nil
}

func (e *editor) handle(ctx context.Context, req *acprpc.Request) (any, error) {
	switch req.Method {
	case acpv1.MethodSessionRequestPermission, acpv1.MethodTerminalCreate:
		e.mu.Lock()
		tu := e.now
		e.mu.Unlock()
		tu.arrived <- struct{}{}
		<-ctx.Done()
		tu.cancelled <- struct{}{}
		e.mu.Lock()
		hold := e.hold
		e.mu.Unlock()
		if hold != nil {
			<-hold
		}
		return nil, ctx.Err() // answered with the permission's cancelled outcome, or -32800
	}
	return nil, nil // session/update
}

// holdConfirmations makes the editor answer the agent's cancelled requests
// only once release is closed.
func (e *editor) holdConfirmations(release <-chan struct{}) {
	e.mu.Lock()
	e.hold = release
	e.mu.Unlock()
}

// turn is one prompt turn in flight.
type turn struct {
	e         *editor
	answer    chan turnEnd
	arrived   chan struct{} // one per request of the agent's, as it comes
	cancelled chan struct{} // one per request of the agent's, as the turn's cancel reaches it
}

// turnEnd is how a turn ended: its stop reason, or the error of its call.
type turnEnd struct {
	stopReason string
	err        error
	at         time.Time
}

// start sends a prompt that keeps the agent working until it is cancelled.
func (e *editor) start(ctx context.Context) *turn {
	tu := &turn{e: e, answer: make(chan turnEnd, 1), arrived: make(chan struct{}, 2), cancelled: make(chan struct{}, 2)}
	e.mu.Lock()
	e.now = tu
	e.mu.Unlock()
	go func() {
		var res struct {
			StopReason string `json:"stopReason"`
		}
		err := e.conn.Call(ctx, acpv1.MethodSessionPrompt, map[string]any{"sessionId": e.session,
			"prompt": []map[string]string{{"type": "text", "text": "slow: analyze file X"}}}, &res)
		tu.answer <- turnEnd{res.StopReason, err, time.Now()}
	}()
	return tu
}

// working waits until the agent has sent both of its requests: the turn is
// mid-flight.
func (tu *turn) working(ctx context.Context) error {
	for range 2 {
		select {
		case <-tu.arrived:
		case <-ctx.Done():
			return errors.New("the agent's requests did not come")
		}
	}
	return nil
}

// cancel sends session/cancel and returns how long the cancelled answer
// took to come.
func (tu *turn) cancel(ctx context.Context) (time.Duration, turnEnd, error) {
	sent := time.Now()
	if err := acprpc.CancelSession(ctx, tu.e.conn, tu.e.session); err != nil {
		return 0, turnEnd{}, err
	}
	end, err := tu.end(ctx)
	return end.at.Sub(sent), end, err
}

// end waits for the turn's end.
func (tu *turn) end(ctx context.Context) (turnEnd, error) {
	select {
	case end := <-tu.answer:
		return end, nil
	case <-ctx.Done():
		return turnEnd{}, errors.New("the turn never ended")
	}
}

// closed reports whether the editor's connection has ended.
func (e *editor) closed() <-chan struct{} { return e.conn.Done() }
