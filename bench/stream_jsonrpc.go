package bench

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
)

// The stream workload on the JSON-RPC libraries (stream_lsp.go,
// stream_jrpc2.go, stream_xexp.go, stream_sourcegraph.go) and on no library
// at all (stream_floor.go). None of the libraries knows ACP: each agent
// answers initialize and session/new, streams a prompt's turn with the
// library's own notify, awaited as the library returns it, and reads
// session/cancel as a notification that cancels the turn of the session it
// names, the way a user of the library would write it: where the library
// cancels a request's context by ID (jrpc2, x/exp), it remembers each
// session's prompt ID and calls that; otherwise it gives the turn a context
// of its own to cancel.

// StreamServe serves the stream workload on r and w and returns a channel
// closed once the connection has ended.
type StreamServe func(r io.Reader, w io.Writer) <-chan struct{}

var streamServers = map[string]StreamServe{
	"acprpc":      func(r io.Reader, w io.Writer) <-chan struct{} { return ServeAcprpcStream(r, w, nil) },
	"coder":       ServeCoderStream,
	"lsp":         ServeLSPStream,
	"jrpc2":       ServeJrpc2Stream,
	"xexp":        ServeXexpStream,
	"sourcegraph": ServeSourcegraphStream,
	"echo":        ServeEchoStream,
	"handoff":     ServeHandoffStream,
}

// LookupStream returns the stream agent of peer name.
func LookupStream(name string) (StreamServe, bool) {
	s, ok := streamServers[name]
	return s, ok
}

// StreamPeers names every stream agent, sorted.
func StreamPeers() []string {
	names := make([]string, 0, len(streamServers))
	for n := range streamServers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Wire names and answers of the stream agents' handshake.
const (
	MethodInitialize = "initialize"
	MethodSessionNew = "session/new"
)

// InitializeResult is the answer to initialize: ACP version 1, no capabilities.
type InitializeResult struct {
	ProtocolVersion int `json:"protocolVersion"`
}

// NewSessionResult is the answer to session/new.
type NewSessionResult struct {
	SessionID string `json:"sessionId"`
}

// SessionCancelParams are the params of session/cancel.
type SessionCancelParams struct {
	SessionID string `json:"sessionId"`
}

// ToolCallUpdateParams are the params of a session/update that reports a
// tool call in progress.
type ToolCallUpdateParams struct {
	SessionID string             `json:"sessionId"`
	Update    ToolCallUpdateBody `json:"update"`
}

// ToolCallUpdateBody is a tool_call_update update.
type ToolCallUpdateBody struct {
	SessionUpdate string `json:"sessionUpdate"`
	ToolCallID    string `json:"toolCallId"`
	Status        string `json:"status"`
}

// chunkParams is the session/update of one chunk of the stream.
func chunkParams(sessionID, text string) UpdateParams {
	return UpdateParams{SessionID: sessionID, Update: UpdateBody{
		SessionUpdate: "agent_message_chunk",
		Content:       ContentBlock{Type: "text", Text: text},
	}}
}

// toolParams is the stream's tool_call_update.
func toolParams(sessionID string) ToolCallUpdateParams {
	return ToolCallUpdateParams{SessionID: sessionID, Update: ToolCallUpdateBody{
		SessionUpdate: "tool_call_update", ToolCallID: "call_1", Status: "in_progress",
	}}
}

// streamTurn runs the turn that text asks for: chunk sends one chunk's
// update, tool the tool_call_update, each awaited. ctx is the turn's, which
// the agent's session/cancel ends; it is looked at before each update, since
// the libraries write a notification whatever its context. It answers
// StopCancelled once ctx has ended, and the send's error if the connection
// failed.
func streamTurn(ctx context.Context, text string, chunk func(string) error, tool func() error) (string, error) {
	stampAllocs()
	spec, _ := ParseStreamText(text)
	for i := range spec.N {
		err := ctx.Err()
		if err == nil {
			err = chunk(spec.Chunk(i))
		}
		if err == nil && spec.ToolAfter(i) {
			if err = ctx.Err(); err == nil {
				err = tool()
			}
		}
		if err != nil {
			return stopFor(ctx, err)
		}
	}
	return StopEndTurn, nil
}

// stopFor is the answer of a turn whose update failed with err: cancelled
// if the turn's context has ended, else the error.
func stopFor(ctx context.Context, err error) (string, error) {
	if ctx.Err() != nil {
		stampStop('C')
		return StopCancelled, nil
	}
	return "", fmt.Errorf("stream: an update failed: %w", err)
}

// streamTurns remembers each session's turn in flight (a request ID, or a
// cancel function where the library has no cancel by ID), for its
// session/cancel.
type streamTurns[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

func (t *streamTurns[T]) start(sessionID string, turn T) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]T{}
	}
	t.m[sessionID] = turn
}

func (t *streamTurns[T]) end(sessionID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, sessionID)
}

// cancel stamps the session/cancel's read and passes the session's turn, if
// one is in flight, to stop.
func (t *streamTurns[T]) cancel(sessionID string, stop func(T)) {
	stampStop('B')
	t.mu.Lock()
	turn, ok := t.m[sessionID]
	t.mu.Unlock()
	if ok {
		stop(turn)
	}
}

// callCancel stops a turn remembered by its cancel function.
func callCancel(cancel context.CancelFunc) { cancel() }
