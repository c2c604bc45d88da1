package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
)

// handoff is the hand-off floor: the least a design must do whose read loop
// stays free while a handler runs, and no JSON. The agent's read loop starts
// a goroutine for each request, which writes the answer itself; the
// client's caller writes its request and waits on a channel that the
// client's read loop fills when the answer with its ID comes back. Those two
// hand-offs (read loop to handler, read loop to caller) are what every such
// design pays above the echo floor, where one goroutine reads and writes.
//
// IDs are found by position, not by decoding: the client writes each
// request with the ID first after "jsonrpc", and the agent writes each
// answer the same way. Like the echo floor it answers a line over 4 KiB
// with a short answer, sends a flood prompt's updates before its answer, and
// has no cancellation.

func init() { register(handoffPeer{}) }

type handoffPeer struct{}

func (handoffPeer) Name() string          { return "handoff" }
func (handoffPeer) Cancel() CancelSupport { return CancelNone }

var (
	handoffIDKey     = []byte(`{"jsonrpc":"2.0","id":`)
	handoffResultEnd = []byte(`,"result":{"stopReason":"end_turn"}}` + "\n")
)

// lockedWriter writes each line in one Write, whichever goroutine sends it.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) write(p []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.w.Write(p)
	return err
}

// lineID returns the ID that follows handoffIDKey at the start of line.
func lineID(line []byte) ([]byte, bool) {
	if !bytes.HasPrefix(line, handoffIDKey) {
		return nil, false
	}
	rest := line[len(handoffIDKey):]
	end := bytes.IndexByte(rest, ',')
	if end <= 0 {
		return nil, false
	}
	return rest[:end], true
}

type handoffServer struct{}

func (handoffPeer) Serve(r io.Reader, w io.Writer, wl *Workload) Server {
	out := &lockedWriter{w: w}
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		var long []byte
		for {
			line, err := readLine(br, &long)
			if err != nil {
				return
			}
			id, ok := lineID(line)
			if !ok {
				continue
			}
			floods := 0
			if i := bytes.Index(line, echoFloodKey); i >= 0 {
				rest := line[i+len(echoFloodKey):]
				if j := bytes.IndexByte(rest, '"'); j > 0 {
					floods, _ = strconv.Atoi(string(rest[:j]))
				}
			}
			// The line's buffer is the reader's: the handler keeps only the ID.
			answer := make([]byte, 0, len(handoffIDKey)+len(id)+len(handoffResultEnd))
			answer = append(append(append(answer, handoffIDKey...), id...), handoffResultEnd...)
			go func() {
				for range floods {
					if out.write(echoUpdateLine) != nil {
						return
					}
				}
				_ = out.write(answer)
			}()
		}
	}()
	return handoffServer{}
}

// Close does nothing: the read loop ends when its input is closed.
func (handoffServer) Close() error { return nil }

type handoffClient struct {
	out     lockedWriter
	mu      sync.Mutex
	nextID  int64
	pending map[string]chan struct{}
	upd     *Counter
}

func (handoffPeer) Dial(r io.Reader, w io.Writer, updates *Counter) Client {
	c := &handoffClient{out: lockedWriter{w: w}, pending: map[string]chan struct{}{}, upd: updates}
	go c.read(r)
	return c
}

func (c *handoffClient) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		line, err := readLine(br, &long)
		if err != nil {
			c.mu.Lock()
			for id, ch := range c.pending {
				close(ch)
				delete(c.pending, id)
			}
			c.pending = nil
			c.mu.Unlock()
			return
		}
		if bytes.HasPrefix(line, echoUpdatePrefix) {
			c.upd.Inc()
			continue
		}
		id, ok := lineID(line)
		if !ok {
			continue
		}
		c.mu.Lock()
		ch := c.pending[string(id)]
		delete(c.pending, string(id))
		c.mu.Unlock()
		if ch != nil {
			ch <- struct{}{}
		}
	}
}

var errHandoffClosed = errors.New("handoff: connection closed")

func (c *handoffClient) Prompt(ctx context.Context, sessionID, text string) (string, error) {
	if text == TextBlock {
		return "", errors.New("handoff: no cancellation")
	}
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	if c.pending == nil {
		c.mu.Unlock()
		return "", errHandoffClosed
	}
	c.nextID++
	id := strconv.AppendInt(nil, c.nextID, 10)
	c.pending[string(id)] = ch
	c.mu.Unlock()
	buf := make([]byte, 0, 128+len(text))
	buf = append(append(buf, handoffIDKey...), id...)
	buf = append(buf, `,"method":"session/prompt","params":{"sessionId":"`...)
	buf = append(buf, sessionID...)
	buf = append(buf, `","prompt":[{"type":"text","text":"`...)
	buf = append(buf, text...)
	buf = append(buf, "\"}]}}\n"...)
	if err := c.out.write(buf); err != nil {
		return "", err
	}
	select {
	case _, ok := <-ch:
		if !ok {
			return "", errHandoffClosed
		}
		return StopEndTurn, nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, string(id))
		c.mu.Unlock()
		return "", ctx.Err()
	}
}

// Close does nothing: the read loop ends when its input is closed.
func (c *handoffClient) Close() error { return nil }
