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

// echo is the floor: no JSON-RPC at all. The agent side is a goroutine that
// reads newline-delimited lines and writes each one back; the client writes
// one line and reads one back. Two exceptions keep the rows comparable with
// the JSON-RPC peers: a line longer than 4 KiB is answered with a short
// fixed line (the 1 MiB row then moves 1 MiB one way, as the others do), and
// a flood prompt is answered by that many pre-built session/update lines
// before the echo. Lines are built by concatenation, not JSON encoding, and
// the workload's texts need no escaping. Callers share one line stream, so
// concurrent prompts take turns. There is no cancellation.

func init() { register(echoPeer{}) }

type echoPeer struct{}

func (echoPeer) Name() string          { return "echo" }
func (echoPeer) Cancel() CancelSupport { return CancelNone }

const echoLongLine = 4 << 10

var (
	echoShortAnswer = []byte(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}` + "\n")
	echoUpdateLine  = []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}` + "\n")
	echoFloodKey    = []byte(`"text":"` + textFloodPrefix)
	echoPromptHead  = `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"`
)

type echoServer struct {
	done chan struct{}
}

func (echoPeer) Serve(r io.Reader, w io.Writer, wl *Workload) Server {
	s := &echoServer{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		br := bufio.NewReaderSize(r, 64<<10)
		bw := bufio.NewWriterSize(w, 64<<10)
		var long []byte
		for {
			line, err := readLine(br, &long)
			if err != nil {
				return
			}
			if i := bytes.Index(line, echoFloodKey); i >= 0 {
				rest := line[i+len(echoFloodKey):]
				if j := bytes.IndexByte(rest, '"'); j > 0 {
					n, _ := strconv.Atoi(string(rest[:j]))
					for k := 0; k < n; k++ {
						if _, err := bw.Write(echoUpdateLine); err != nil {
							return
						}
					}
				}
			}
			if len(line) > echoLongLine {
				_, err = bw.Write(echoShortAnswer)
			} else {
				_, err = bw.Write(line)
			}
			if err == nil {
				err = bw.Flush()
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

// readLine returns the next line including its newline. The slice is only
// valid until the next call; lines longer than the reader's buffer are
// assembled in *long, which is reused.
func readLine(br *bufio.Reader, long *[]byte) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	buf := append((*long)[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = br.ReadSlice('\n')
		buf = append(buf, line...)
	}
	*long = buf
	return buf, err
}

// Close returns once the agent goroutine has stopped, which it does when
// its input is closed; it must therefore be called after the streams close.
func (s *echoServer) Close() error { return nil }

type echoClient struct {
	mu   sync.Mutex
	w    io.Writer
	br   *bufio.Reader
	buf  []byte
	long []byte
	upd  *Counter
}

func (echoPeer) Dial(r io.Reader, w io.Writer, updates *Counter) Client {
	return &echoClient{w: w, br: bufio.NewReaderSize(r, 64<<10), upd: updates}
}

var echoUpdatePrefix = echoUpdateLine[:40]

func (c *echoClient) Prompt(ctx context.Context, sessionID, text string) (string, error) {
	if text == TextBlock {
		return "", errors.New("echo: no cancellation")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = append(c.buf[:0], echoPromptHead...)
	c.buf = append(c.buf, sessionID...)
	c.buf = append(c.buf, `","prompt":[{"type":"text","text":"`...)
	c.buf = append(c.buf, text...)
	c.buf = append(c.buf, "\"}]}}\n"...)
	if _, err := c.w.Write(c.buf); err != nil {
		return "", err
	}
	for {
		line, err := readLine(c.br, &c.long)
		if err != nil {
			return "", err
		}
		if bytes.HasPrefix(line, echoUpdatePrefix) {
			c.upd.Inc()
			continue
		}
		return StopEndTurn, nil
	}
}

func (c *echoClient) Close() error { return nil }
