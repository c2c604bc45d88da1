package bench

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strconv"
	"sync"
)

// The stream's floors, with no JSON-RPC library and no JSON: the agent
// finds a request's ID, method, session and text by their keys in the line
// (the raw-wire client writes them so) and builds each line by appending
// bytes.
//
// echo is the floor of row 1, the least any agent does to stream a turn: one
// goroutine reads a line and, for a prompt, writes every update into a
// 64 KiB buffer, flushed as it fills, then the answer. It reads nothing while
// it streams, so it cannot stop a turn: the stop's rows have no echo.
//
// handoff is the floor of a design whose read loop stays free while a turn
// streams, the least such an agent does: the read loop starts a goroutine
// for each prompt, which writes each update with a write of its own under a
// lock and looks at its context before each; session/cancel, read by the
// read loop, cancels that context.

// ServeEchoStream serves the stream workload at the echo floor on r and w
// and returns a channel closed once its input has ended.
func ServeEchoStream(r io.Reader, w io.Writer) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		br := bufio.NewReaderSize(r, 64<<10)
		bw := bufio.NewWriterSize(w, 64<<10)
		var (
			long, line []byte
			sessions   int
		)
		for {
			req, err := readLine(br, &long)
			if err != nil {
				return
			}
			id, method, ok := rawRequest(req)
			if !ok {
				continue // a notification: nothing to answer, no turn to stop
			}
			var result []byte
			switch method {
			case MethodPrompt:
				sid := rawString(req, `"sessionId":"`)
				stop, _ := streamTurn(context.Background(), rawString(req, `"text":"`),
					func(text string) error {
						line = appendChunkLine(line[:0], sid, text)
						_, err := bw.Write(line)
						return err
					},
					func() error {
						line = appendToolLine(line[:0], sid)
						_, err := bw.Write(line)
						return err
					})
				result = appendStopResult(nil, stop)
			default:
				result = rawHandshake(method, &sessions)
			}
			line = appendAnswer(line[:0], id, result)
			if _, err := bw.Write(line); err != nil || bw.Flush() != nil {
				return
			}
		}
	}()
	return done
}

// ServeHandoffStream serves the stream workload at the hand-off floor on r
// and w and returns a channel closed once its input has ended and every turn
// has returned.
func ServeHandoffStream(r io.Reader, w io.Writer) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		var (
			out      = &lockedWriter{w: w}
			turns    streamTurns[context.CancelFunc]
			running  sync.WaitGroup
			long     []byte
			sessions int
		)
		defer running.Wait()
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			req, err := readLine(br, &long)
			if err != nil {
				return
			}
			id, method, ok := rawRequest(req)
			switch {
			case !ok && method == MethodSessionCancel:
				turns.cancel(rawString(req, `"sessionId":"`), callCancel)
			case method == MethodPrompt:
				// The line is the reader's: the turn keeps copies.
				id, sid, text := string(id), rawString(req, `"sessionId":"`), rawString(req, `"text":"`)
				ctx, cancel := context.WithCancel(context.Background())
				turns.start(sid, cancel)
				running.Go(func() {
					defer cancel()
					var line []byte
					stop, _ := streamTurn(ctx, text,
						func(text string) error {
							line = appendChunkLine(line[:0], sid, text)
							return out.write(line)
						},
						func() error {
							line = appendToolLine(line[:0], sid)
							return out.write(line)
						})
					turns.end(sid)
					_ = out.write(appendAnswer(line[:0], []byte(id), appendStopResult(nil, stop)))
				})
			case ok:
				if out.write(appendAnswer(nil, id, rawHandshake(method, &sessions))) != nil {
					return
				}
			}
		}
	}()
	return done
}

// rawRequest finds a line's ID and method; ok is false for a notification.
func rawRequest(line []byte) (id []byte, method string, ok bool) {
	method = rawString(line, `"method":"`)
	i := bytes.Index(line, []byte(`"id":`))
	if i < 0 {
		return nil, method, false
	}
	rest := line[i+len(`"id":`):]
	end := bytes.IndexAny(rest, ",}")
	if end <= 0 {
		return nil, method, false
	}
	return rest[:end], method, true
}

// rawString is the string that follows key (which ends with its opening
// quote) in line, up to the closing quote; the workload's strings need no
// escapes.
func rawString(line []byte, key string) string {
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return ""
	}
	rest := line[i+len(key):]
	if end := bytes.IndexByte(rest, '"'); end >= 0 {
		return string(rest[:end])
	}
	return ""
}

// rawHandshake is the result of initialize, session/new, or null for any
// other request.
func rawHandshake(method string, sessions *int) []byte {
	switch method {
	case MethodInitialize:
		return []byte(`{"protocolVersion":1}`)
	case MethodSessionNew:
		*sessions++
		return []byte(`{"sessionId":"s` + strconv.Itoa(*sessions) + `"}`)
	}
	return []byte("null")
}

func appendStopResult(b []byte, stop string) []byte {
	return append(append(append(b, `{"stopReason":"`...), stop...), `"}`...)
}

func appendAnswer(b, id, result []byte) []byte {
	b = append(append(append(b, `{"jsonrpc":"2.0","id":`...), id...), `,"result":`...)
	return append(append(b, result...), "}\n"...)
}

const rawUpdateHead = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"`

func appendChunkLine(b []byte, sessionID, text string) []byte {
	b = append(append(append(b, rawUpdateHead...), sessionID...), `","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"`...)
	return append(append(b, text...), "\"}}}}\n"...)
}

func appendToolLine(b []byte, sessionID string) []byte {
	b = append(append(b, rawUpdateHead...), sessionID...)
	return append(b, `","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"in_progress"}}}`+"\n"...)
}
