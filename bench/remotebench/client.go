package remotebench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The transports a Client dials.
const (
	WebSocket = "ws"
	HTTP      = "http"
)

// wire is one connection's messages both ways, as raw JSON-RPC: send posts
// or writes one client message; recv returns the server's next message for
// the session once the session is open (before, the connection's).
type wire interface {
	send(ctx context.Context, msg []byte) error
	recv() ([]byte, error)
	// opened is told the session's ID once session/new has answered, so
	// that later messages carry it and are read from its stream.
	opened(ctx context.Context, session string) error
	close() error
}

// Client is one connection of the load generator with one ACP session, on
// which it runs turns one at a time. It writes every message itself and
// decodes only what it must check, so that it costs every server the same.
type Client struct {
	w       wire
	session string
	nextID  int64
	updates int // session/update notifications read since the last prompt
}

// Dial opens a connection over transport (WebSocket or HTTP) to the
// endpoint url ("http://host:port/acp"), initializes it and opens a
// session. hc carries every Streamable HTTP connection (NewHTTPClient).
func Dial(ctx context.Context, transport, url string, hc *http.Client) (*Client, error) {
	var w wire
	var err error
	switch transport {
	case WebSocket:
		w, err = dialWebSocket(ctx, "ws"+strings.TrimPrefix(url, "http"))
	case HTTP:
		w, err = dialHTTP(ctx, hc, url, []byte(initializeMessage))
	default:
		return nil, fmt.Errorf("remotebench: unknown transport %q", transport)
	}
	if err != nil {
		return nil, err
	}
	c := &Client{w: w, nextID: 1}
	if err := c.open(ctx, transport); err != nil {
		_ = w.close()
		return nil, err
	}
	return c, nil
}

const initializeMessage = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`

// open initializes the connection (over HTTP its POST did, and its answer
// is the first recv) and opens the session.
func (c *Client) open(ctx context.Context, transport string) error {
	if transport == WebSocket {
		if err := c.w.send(ctx, []byte(initializeMessage)); err != nil {
			return err
		}
	}
	if _, err := c.answer(0); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	id := c.id()
	msg := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`
	if err := c.w.send(ctx, []byte(msg)); err != nil {
		return err
	}
	res, err := c.answer(id)
	if err != nil {
		return fmt.Errorf("session/new: %w", err)
	}
	if res.SessionID == "" {
		return fmt.Errorf("session/new: no sessionId")
	}
	c.session = res.SessionID
	return c.w.opened(ctx, c.session)
}

func (c *Client) id() int64 {
	id := c.nextID
	c.nextID++
	return id
}

// Close ends the connection.
func (c *Client) Close() error { return c.w.close() }

// Turn runs one whole turn: the prompt, its Updates session/updates, its
// end_turn answer.
func (c *Client) Turn(ctx context.Context) error {
	id, err := c.prompt(ctx, TextTurn)
	if err != nil {
		return err
	}
	res, err := c.answer(id)
	switch {
	case err != nil:
		return err
	case res.StopReason != "end_turn" || c.updates != Updates:
		return fmt.Errorf("remotebench: a turn ended %q after %d updates", res.StopReason, c.updates)
	}
	return nil
}

// StartWait starts a turn that waits for its cancel, and returns once the
// agent's first update for it has come: the turn is then in flight. It
// returns the prompt's ID, for AwaitCancelled.
func (c *Client) StartWait(ctx context.Context) (int64, error) {
	id, err := c.prompt(ctx, TextWait)
	if err != nil {
		return 0, err
	}
	for c.updates == 0 {
		m, err := c.next()
		if err != nil {
			return 0, err
		}
		if m.ID != nil {
			return 0, fmt.Errorf("remotebench: an answer came before the waiting turn's update: %s", m.raw)
		}
	}
	return id, nil
}

// Cancel sends session/cancel for the client's session.
func (c *Client) Cancel(ctx context.Context) error {
	return c.w.send(ctx, []byte(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":`+strconv.Quote(c.session)+`}}`))
}

// AwaitCancelled reads until the answer to prompt id, which must say
// cancelled.
func (c *Client) AwaitCancelled(id int64) error {
	res, err := c.answer(id)
	if err != nil {
		return err
	}
	if res.StopReason != "cancelled" {
		return fmt.Errorf("remotebench: a cancelled turn ended %q", res.StopReason)
	}
	return nil
}

// prompt sends session/prompt with text and returns its ID.
func (c *Client) prompt(ctx context.Context, text string) (int64, error) {
	id := c.id()
	c.updates = 0
	b := make([]byte, 0, 160)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"session/prompt","params":{"sessionId":`...)
	b = strconv.AppendQuote(b, c.session)
	b = append(b, `,"prompt":[{"type":"text","text":`...)
	b = strconv.AppendQuote(b, text)
	b = append(b, `}]}}`...)
	return id, c.w.send(ctx, b)
}

// message is what the load generator reads of a server's message.
type message struct {
	ID     *int64          `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	raw []byte
}

// result is what the load generator reads of an answer's result.
type result struct {
	StopReason string `json:"stopReason"`
	SessionID  string `json:"sessionId"`
}

// next reads the next message, counting session/updates.
func (c *Client) next() (message, error) {
	raw, err := c.w.recv()
	if err != nil {
		return message{}, err
	}
	m := message{raw: raw}
	if err := json.Unmarshal(raw, &m); err != nil {
		return message{}, fmt.Errorf("remotebench: %w in %s", err, raw)
	}
	switch {
	case m.ID == nil && m.Method == "session/update":
		c.updates++
	case m.ID != nil && m.Method != "":
		return message{}, fmt.Errorf("remotebench: unexpected request from the server: %s", raw)
	}
	return m, nil
}

// answer reads until the answer to id and returns its result.
func (c *Client) answer(id int64) (result, error) {
	for {
		m, err := c.next()
		if err != nil {
			return result{}, err
		}
		if m.ID == nil {
			continue
		}
		if *m.ID != id {
			return result{}, fmt.Errorf("remotebench: an answer to %d came while waiting for %d: %s", *m.ID, id, m.raw)
		}
		if m.Error != nil {
			return result{}, fmt.Errorf("remotebench: error %d: %s", m.Error.Code, m.Error.Message)
		}
		var r result
		if err := json.Unmarshal(m.Result, &r); err != nil {
			return result{}, fmt.Errorf("remotebench: %w in %s", err, m.raw)
		}
		return r, nil
	}
}

// Session is the ID of the client's session, as session/new answered it.
func (c *Client) Session() string { return c.session }

// Send writes one raw JSON-RPC message: over WebSocket a text message, over
// Streamable HTTP a POST carrying the connection's and the session's IDs.
// For a client of its own workload (acpbench stream), beside Recv.
func (c *Client) Send(ctx context.Context, msg []byte) error { return c.w.send(ctx, msg) }

// Recv reads the server's next raw message for the session: over
// WebSocket the next text message, over Streamable HTTP the next event of
// the session's own SSE stream (opened with Acp-Session-Id, as the
// TypeScript SDK's server requires; acprpc's serves it as well).
func (c *Client) Recv() ([]byte, error) { return c.w.recv() }
