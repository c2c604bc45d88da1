package bench

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Wire names used by the workload.
const (
	MethodPrompt        = "session/prompt"
	MethodUpdate        = "session/update"
	MethodSessionCancel = "session/cancel"
	MethodCancelRequest = "$/cancel_request"

	StopEndTurn   = "end_turn"
	StopCancelled = "cancelled"

	// CodeRequestCancelled is the JSON-RPC error code for a cancelled request.
	CodeRequestCancelled = -32800
)

// Prompt texts understood by the workload's agent side.
const (
	// TextHello asks for an immediate {"stopReason":"end_turn"}.
	TextHello = "hello"
	// TextBlock asks the agent to block until the request is cancelled and then
	// answer with the ACP cancellation marker {"stopReason":"cancelled"}.
	TextBlock = "block"
	// textFloodPrefix followed by a count N asks the agent to send N
	// session/update notifications before answering end_turn.
	textFloodPrefix = "flood "
)

// FloodText returns the prompt text that makes the agent send n updates.
func FloodText(n int) string { return textFloodPrefix + strconv.Itoa(n) }

// ContentBlock is an ACP text content block.
type ContentBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// PromptParams are the params of session/prompt.
type PromptParams struct {
	SessionID string         `json:"sessionId"`
	Prompt    []ContentBlock `json:"prompt"`
}

// PromptResult is the result of session/prompt.
type PromptResult struct {
	StopReason string `json:"stopReason"`
}

// UpdateParams are the params of session/update.
type UpdateParams struct {
	SessionID string     `json:"sessionId"`
	Update    UpdateBody `json:"update"`
}

// UpdateBody is an agent_message_chunk update.
type UpdateBody struct {
	SessionUpdate string       `json:"sessionUpdate"`
	Content       ContentBlock `json:"content"`
}

// CancelRequestParams are the params of $/cancel_request.
type CancelRequestParams struct {
	RequestID int64 `json:"requestId"`
}

// UpdateText is the text of every session/update the agent sends.
const UpdateText = "hi"

// NewUpdate returns the update the agent sends during a flood.
func NewUpdate(sessionID string) UpdateParams {
	return UpdateParams{SessionID: sessionID, Update: UpdateBody{
		SessionUpdate: "agent_message_chunk",
		Content:       ContentBlock{Type: "text", Text: UpdateText},
	}}
}

// NewPrompt returns session/prompt params carrying one text block.
func NewPrompt(sessionID, text string) PromptParams {
	return PromptParams{SessionID: sessionID, Prompt: []ContentBlock{{Type: "text", Text: text}}}
}

// Workload is the agent's behaviour, shared by every peer adapter. Adapters
// decode session/prompt in their peer's own way and call Prompt with the
// first text block; the hooks and counters let benchmarks observe the
// agent side without touching the wire.
type Workload struct {
	// OnBlock, if set, is called when a blocking prompt has started.
	OnBlock func()
	// OnCancel, if set, is called when a blocking prompt's context fired.
	OnCancel func()

	Blocked    atomic.Int64 // blocking prompts started
	CancelSeen atomic.Int64 // blocking prompts whose context fired
	lastCancel atomic.Int64 // monotonic nanoseconds since start of the last cancel seen
}

var monoStart = time.Now()

// Mono returns monotonic nanoseconds since the process started.
func Mono() int64 { return int64(time.Since(monoStart)) }

// LastCancel returns when the last blocking prompt saw its cancel, in Mono units.
func (w *Workload) LastCancel() int64 { return w.lastCancel.Load() }

// Prompt runs one session/prompt. notify sends one session/update to the
// client. It returns the stop reason to answer with.
func (w *Workload) Prompt(ctx context.Context, sessionID, text string, notify func(UpdateParams) error) (string, error) {
	switch {
	case text == TextBlock:
		w.Blocked.Add(1)
		if w.OnBlock != nil {
			w.OnBlock()
		}
		<-ctx.Done()
		w.lastCancel.Store(Mono())
		w.CancelSeen.Add(1)
		if w.OnCancel != nil {
			w.OnCancel()
		}
		return StopCancelled, nil
	case strings.HasPrefix(text, textFloodPrefix):
		n, err := strconv.Atoi(text[len(textFloodPrefix):])
		if err != nil {
			return "", err
		}
		u := NewUpdate(sessionID)
		for i := 0; i < n; i++ {
			if err := notify(u); err != nil {
				return "", err
			}
		}
		return StopEndTurn, nil
	default:
		return StopEndTurn, nil
	}
}

// Counter counts session/update notifications on the client side and lets a
// waiter block until a target count is reached. Inc costs one atomic add and
// one atomic load on the hot path.
type Counter struct {
	n      atomic.Int64
	target atomic.Int64
	mu     sync.Mutex
	ch     chan struct{}
}

// Inc records one update.
func (c *Counter) Inc() {
	if c.n.Add(1) == c.target.Load() {
		c.fire()
	}
}

func (c *Counter) fire() {
	c.mu.Lock()
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
	c.mu.Unlock()
}

// Load returns the number of updates seen.
func (c *Counter) Load() int64 { return c.n.Load() }

// Await returns a channel closed once the count reaches target. Only one
// Await may be outstanding at a time.
func (c *Counter) Await(target int64) <-chan struct{} {
	ch := make(chan struct{})
	c.mu.Lock()
	c.ch = ch
	c.target.Store(target)
	c.mu.Unlock()
	if c.n.Load() >= target {
		c.fire()
	}
	return ch
}
