package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// The prompts of these tests carry one of these marks; the model answers
// the last one in its request (the latest prompt: a request carries the
// conversation so far).
const (
	quickMark = "[[quick]]"
	slowMark  = "[[slow]]"
	// cancelExamplePrompt is examples/cancel's client's prompt, whose turn
	// it cancels: the model answers it slowly, as a slowMark.
	cancelExamplePrompt = "count to a hundred"
)

// slowWord and slowFor pace a slow answer: a word every slowWord, for as
// long as no cancel can take.
const (
	slowWord = 100 * time.Millisecond
	slowFor  = 30 * time.Second
)

// quickReply is the whole answer to a quick prompt.
const quickReply = "Hello from the fake model."

// modelServer stands in for the hosted model, on loopback: the OpenAI
// Responses API Codex calls (POST /v1/responses, server-sent events), the
// Anthropic Messages API Claude Code calls (POST /v1/messages, streamed
// or not, and /v1/messages/count_tokens), the OpenAI Chat Completions API
// of an OpenAI-compatible provider (POST /v1/chat/completions: opencode,
// pi) and the Gemini API (POST /v1beta/models/MODEL:streamGenerateContent
// and :generateContent: Gemini CLI). It records every request, and
// whether the agent closed it before the answer was whole.
type modelServer struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []*modelRequest
	changed  chan struct{} // closed and replaced on every change
}

// modelRequest is one request the model served.
type modelRequest struct {
	Path    string
	Stream  bool
	Slow    bool
	Tools   bool // the request offers the model tools: an agent's turn, not a side call (a title, a summary)
	Aborted bool // the agent closed the request before the answer was whole
	Done    bool // the handler has returned
	Start   time.Time
	End     time.Time
}

func newModelServer(t *testing.T) *modelServer {
	m := &modelServer{changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", m.responses)
	mux.HandleFunc("POST /v1/messages", m.messages)
	mux.HandleFunc("POST /v1/messages/count_tokens", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		writeJSON(w, map[string]int{"input_tokens": 10})
	})
	mux.HandleFunc("POST /v1/chat/completions", m.chatCompletions)
	mux.HandleFunc("POST /v1beta/models/{call}", m.gemini)
	mux.HandleFunc("HEAD /{$}", func(http.ResponseWriter, *http.Request) {}) // Claude Code's check that the server is there
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Logf("fake model: %s %s answered 404", r.Method, r.URL.Path)
		http.NotFound(w, r)
	})
	m.srv = httptest.NewServer(mux) // on 127.0.0.1
	t.Cleanup(m.srv.Close)
	return m
}

// URL is the server's base URL.
func (m *modelServer) URL() string { return m.srv.URL }

// begin records a request and returns it with the prompt's pace.
func (m *modelServer) begin(r *http.Request) (*modelRequest, []byte) {
	body, _ := io.ReadAll(r.Body)
	text := string(body)
	var meta struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &meta)
	req := &modelRequest{
		Path:   r.URL.Path,
		Stream: meta.Stream || r.URL.Path == "/v1/responses" || strings.HasSuffix(r.URL.Path, ":streamGenerateContent"),
		Slow:   max(strings.LastIndex(text, slowMark), strings.LastIndex(text, cancelExamplePrompt)) > strings.LastIndex(text, quickMark),
		Tools:  strings.Contains(text, `"tools":[{`) || strings.Contains(text, `"functionDeclarations"`),
		Start:  time.Now(),
	}
	m.update(func() { m.requests = append(m.requests, req) })
	return req, body
}

// end records how a request ended.
func (m *modelServer) end(req *modelRequest, aborted bool) {
	m.update(func() {
		req.Aborted, req.Done, req.End = aborted, true, time.Now()
	})
}

func (m *modelServer) update(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f()
	close(m.changed)
	m.changed = make(chan struct{})
}

// Requests returns a copy of what was served so far.
func (m *modelServer) Requests() []modelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]modelRequest, len(m.requests))
	for i, r := range m.requests {
		out[i] = *r
	}
	return out
}

// Await waits until cond holds of the requests, or ctx ends.
func (m *modelServer) Await(ctx context.Context, cond func([]modelRequest) bool) error {
	for {
		m.mu.Lock()
		changed := m.changed
		m.mu.Unlock()
		if cond(m.Requests()) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("the model's requests: %+v: %w", m.Requests(), ctx.Err())
		}
	}
}

// words is what the model says: the quick reply, or a word per slowWord.
func words(slow bool) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		if !slow {
			for _, w := range strings.SplitAfter(quickReply, " ") {
				if !yield(w) {
					return
				}
			}
			return
		}
		for i := 0; i < int(slowFor/slowWord); i++ {
			if !yield(fmt.Sprintf("word%d ", i)) {
				return
			}
		}
	}
}

// sse writes server-sent events, pacing a slow answer, and reports whether
// the client closed the request under it.
type sse struct {
	w    http.ResponseWriter
	r    *http.Request
	slow bool
}

func newSSE(w http.ResponseWriter, r *http.Request, slow bool) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, r: r, slow: slow}
}

// event writes one event; false once the client is gone.
func (s *sse) event(name string, data any) bool {
	b, _ := json.Marshal(data)
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return false
	}
	s.w.(http.Flusher).Flush()
	return s.r.Context().Err() == nil
}

// data writes one event that has no name, as the Chat Completions and
// Gemini APIs stream them; false once the client is gone.
func (s *sse) data(data any) bool {
	b, ok := data.([]byte)
	if !ok {
		b, _ = json.Marshal(data)
	}
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", b); err != nil {
		return false
	}
	s.w.(http.Flusher).Flush()
	return s.r.Context().Err() == nil
}

// pace waits between two words of a slow answer; false once the client is
// gone.
func (s *sse) pace() bool {
	if !s.slow {
		return s.r.Context().Err() == nil
	}
	t := time.NewTimer(slowWord)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.r.Context().Done():
		return false
	}
}

// responses serves the OpenAI Responses API as Codex reads it: the text as
// output_text deltas, the message whole, then response.completed.
func (m *modelServer) responses(w http.ResponseWriter, r *http.Request) {
	req, _ := m.begin(r)
	s := newSSE(w, r, req.Slow)
	whole, ok := m.streamResponses(s)
	if ok {
		ok = s.event("response.output_item.done", map[string]any{
			"type": "response.output_item.done", "output_index": 0,
			"item": map[string]any{
				"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": whole, "annotations": []any{}}},
			},
		}) && s.event("response.completed", map[string]any{
			"type": "response.completed",
			"response": map[string]any{
				"id": "resp_1", "object": "response", "status": "completed",
				"usage": map[string]any{
					"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
					"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
					"total_tokens": 15,
				},
			},
		})
	}
	m.end(req, !ok)
}

func (m *modelServer) streamResponses(s *sse) (string, bool) {
	if !s.event("response.created", map[string]any{
		"type": "response.created", "response": map[string]any{"id": "resp_1", "object": "response", "status": "in_progress"},
	}) || !s.event("response.output_item.added", map[string]any{
		"type": "response.output_item.added", "output_index": 0,
		"item": map[string]any{"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []any{}},
	}) {
		return "", false
	}
	var whole strings.Builder
	for w := range words(s.slow) {
		whole.WriteString(w)
		if !s.event("response.output_text.delta", map[string]any{
			"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": w,
		}) || !s.pace() {
			return "", false
		}
	}
	return whole.String(), true
}

// messages serves the Anthropic Messages API as Claude Code reads it:
// streamed as message_start, one text block and message_stop, or as one
// JSON message.
func (m *modelServer) messages(w http.ResponseWriter, r *http.Request) {
	req, body := m.begin(r)
	var meta struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &meta)
	if !req.Stream {
		writeJSON(w, map[string]any{
			"id": "msg_1", "type": "message", "role": "assistant", "model": meta.Model,
			"content":     []any{map[string]any{"type": "text", "text": quickReply}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]int{"input_tokens": 10, "output_tokens": 5},
		})
		m.end(req, false)
		return
	}
	s := newSSE(w, r, req.Slow)
	ok := s.event("message_start", map[string]any{
		"type": "message_start",
		"message": map[string]any{
			"id": "msg_1", "type": "message", "role": "assistant", "model": meta.Model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 1},
		},
	}) && s.event("content_block_start", map[string]any{
		"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""},
	})
	for w := range words(req.Slow) {
		if !ok {
			break
		}
		ok = s.event("content_block_delta", map[string]any{
			"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": w},
		}) && s.pace()
	}
	ok = ok && s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}) &&
		s.event("message_delta", map[string]any{
			"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
			"usage": map[string]int{"output_tokens": 5},
		}) && s.event("message_stop", map[string]any{"type": "message_stop"})
	m.end(req, !ok)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// chatCompletions serves the OpenAI Chat Completions API: streamed, a chunk
// per word, the finish_reason and usage, then [DONE]; or one JSON answer.
func (m *modelServer) chatCompletions(w http.ResponseWriter, r *http.Request) {
	req, _ := m.begin(r)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl_1", "object": "chat.completion.chunk", "created": 0, "model": "fake-model",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	if !req.Stream {
		writeJSON(w, map[string]any{
			"id": "chatcmpl_1", "object": "chat.completion", "created": 0, "model": "fake-model",
			"choices": []any{map[string]any{
				"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": quickReply},
			}},
			"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
		m.end(req, false)
		return
	}
	s := newSSE(w, r, req.Slow)
	ok := s.data(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for w := range words(req.Slow) {
		if !ok {
			break
		}
		ok = s.data(chunk(map[string]any{"content": w}, nil)) && s.pace()
	}
	if ok {
		last := chunk(map[string]any{}, "stop")
		last["usage"] = map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
		ok = s.data(last) && s.data([]byte("[DONE]"))
	}
	m.end(req, !ok)
}

// gemini serves the Gemini API's MODEL:streamGenerateContent (server-sent
// events, a candidate per word, the last with finishReason STOP) and
// MODEL:generateContent (one JSON answer) and MODEL:countTokens.
func (m *modelServer) gemini(w http.ResponseWriter, r *http.Request) {
	_, method, _ := strings.Cut(r.PathValue("call"), ":")
	if method == "countTokens" {
		_, _ = io.Copy(io.Discard, r.Body)
		writeJSON(w, map[string]int{"totalTokens": 10})
		return
	}
	req, _ := m.begin(r)
	candidate := func(text string, finish string) map[string]any {
		c := map[string]any{"index": 0, "content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}}
		if finish != "" {
			c["finishReason"] = finish
		}
		return map[string]any{
			"candidates":    []any{c},
			"usageMetadata": map[string]int{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
			"modelVersion":  "fake-model",
		}
	}
	if method != "streamGenerateContent" {
		writeJSON(w, candidate(quickReply, "STOP"))
		m.end(req, false)
		return
	}
	s := newSSE(w, r, req.Slow)
	ok := true
	for w := range words(req.Slow) {
		if !ok {
			break
		}
		ok = s.data(candidate(w, "")) && s.pace()
	}
	ok = ok && s.data(candidate("", "STOP"))
	m.end(req, !ok)
}
