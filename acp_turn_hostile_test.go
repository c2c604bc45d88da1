package acprpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// An agent that never answers a cancelled prompt, and a client that
// prompts again and again on that session, each prompt cancelled in turn:
// each cancelled turn holds the session's next prompts only until
// TurnCancelWait has passed since its cancel, and is warned about once. A
// turn whose call has already waited that long holds nothing more, so the
// agent cannot make every later prompt wait TurnCancelWait again; it used
// to hold each next prompt TurnCancelWait anew, for ever.
func TestPromptNeverAnsweredCancelledTurnHoldsOnlyOnce(t *testing.T) {
	ctx := wiretest.Context(t)
	records := &wiretest.Recorder{}
	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{Logger: records.Logger(), TurnCancelWait: 20 * time.Millisecond})
	const prompts = 5
	for range prompts {
		callCtx, cancel := context.WithCancel(ctx)
		done := goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": "s"}, nil)
		p.ExpectRequest(ctx, "session/prompt")
		cancel()
		p.ExpectNotification(ctx, "session/cancel")
		assert.ErrorIs(t, wiretest.Recv(t, ctx, done), acprpc.ErrCancelled) // its own wait ran out
	}
	var held, warned int
	for _, r := range records.Logged() {
		switch {
		case strings.Contains(r.Message, "holding a prompt"):
			held++
		case strings.Contains(r.Message, "has not answered a prompt whose turn was cancelled"):
			warned++
		}
	}
	assert.Zero(t, held, "a prompt held for turns whose wait had run out")
	assert.Equal(t, prompts-1, warned, "one warning per unanswered turn a prompt went out after")
}

// Shutdown while a prompt is held behind its session's cancelled turn ends
// the held call without sending it: a prompt sent then would only be
// cancelled at once. It used to go out once the hold ran out.
func TestShutdownEndsAHeldPromptUnsent(t *testing.T) {
	ctx := wiretest.Context(t)
	held := logSignal{msg: "acprpc: holding a prompt", seen: make(chan struct{})}
	c, p := wiretest.Connect(t, wiretest.Transports[0], pinged(), &acprpc.Options{Logger: slog.New(&held), TurnCancelWait: time.Minute})
	callCtx, cancel := context.WithCancel(ctx)
	done := goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": "s"}, nil, acprpc.WaitAfterCancel(time.Millisecond))
	p.ExpectRequest(ctx, "session/prompt") // never answered
	cancel()
	p.ExpectNotification(ctx, "session/cancel")
	assert.ErrorIs(t, wiretest.Recv(t, ctx, done), acprpc.ErrCancelled)

	done = goCall(c, ctx, "session/prompt", map[string]any{"sessionId": "s"}, nil)
	wiretest.Recv(t, ctx, (<-chan struct{})(held.seen))
	shut := make(chan error, 1)
	go func() { shut <- c.Shutdown(ctx) }()
	err := wiretest.Recv(t, ctx, done)
	require.ErrorIs(t, err, acprpc.ErrShutdown)
	var callErr *acprpc.CallError
	require.ErrorAs(t, err, &callErr)
	assert.True(t, callErr.ID.IsZero(), "not sent, so no ID: %v", err)
	require.NoError(t, wiretest.Recv(t, ctx, shut))
	for _, m := range p.Rest(ctx) {
		assert.NotEqual(t, "session/prompt", m.Method, "the held prompt was sent: %s", m.Raw)
	}
}

// What a prompt call whose context ended returns for each way an agent may
// answer its cancelled turn: an end_turn is returned as it came (unless
// Options.ReportCancelledTurns), every member kept, with a nil error; an
// error answer is an error matching ErrCancelled, the context's error and
// the agent's *Error.
func TestPromptCancelledTurnAnsweredOtherwise(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		fails        bool
	}{
		{name: "end_turn", answer: `{"stopReason":"end_turn","_meta":{"k":[1,2]}}`},
		{name: "refusal", answer: `{"stopReason":"refusal"}`},
		{name: "error", fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := wiretest.Context(t)
			c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
			callCtx, cancel := context.WithCancel(ctx)
			var res json.RawMessage
			done := goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": "s"}, &res)
			m := p.ExpectRequest(ctx, "session/prompt")
			cancel()
			p.ExpectNotification(ctx, "session/cancel")
			if !tc.fails {
				p.Respond(string(m.ID), tc.answer)
				require.NoError(t, wiretest.Recv(t, ctx, done))
				assert.Equal(t, tc.answer, string(res), "the answer as it came")
				return
			}
			p.RespondError(string(m.ID), acprpc.CodeInternalError, "model crashed")
			err := wiretest.Recv(t, ctx, done)
			assert.ErrorIs(t, err, acprpc.ErrCancelled)
			assert.ErrorIs(t, err, context.Canceled)
			var rpcErr *acprpc.Error
			require.ErrorAs(t, err, &rpcErr)
			assert.EqualValues(t, acprpc.CodeInternalError, rpcErr.Code)
			assert.Contains(t, err.Error(), "model crashed")
		})
	}
}

// A prompt whose sessionId is not a string (a number, null, an object)
// names no session that session/cancel could reach: its cancel is
// $/cancel_request, and it holds no later prompt.
func TestPromptWithSessionIDNotAStringGetsCancelRequest(t *testing.T) {
	for _, sid := range []any{42, nil, map[string]string{"id": "s"}, ""} {
		t.Run(fmt.Sprint(sid), func(t *testing.T) {
			ctx := wiretest.Context(t)
			c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{TurnCancelWait: time.Minute})
			callCtx, cancel := context.WithCancel(ctx)
			done := goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": sid}, nil, acprpc.WaitAfterCancel(time.Millisecond))
			m := p.ExpectRequest(ctx, "session/prompt")
			cancel()
			assert.True(t, p.ExpectNotification(ctx, acprpc.MethodCancelRequest).IsCancelOf(string(m.ID)))
			assert.ErrorIs(t, wiretest.Recv(t, ctx, done), acprpc.ErrCancelled)
			done = goCall(c, ctx, "session/prompt", map[string]any{"sessionId": sid}, nil)
			next := p.ExpectRequest(ctx, "session/prompt") // not held
			p.Respond(string(next.ID), `{"stopReason":"end_turn"}`)
			require.NoError(t, wiretest.Recv(t, ctx, done))
		})
	}
}

// A prompt's context ending as the agent answers: the call returns the
// answer exactly as the agent sent it, with a nil error, or, when the
// context ended before the prompt could be sent, ErrCancelled and no
// result; never an answer of its own making.
func TestPromptCancelRacingTheAnswerKeepsTheAnswer(t *testing.T) {
	ctx := wiretest.Context(t)
	const answer = `{"stopReason":"end_turn","_meta":{"n":1}}`
	agent := wiretest.Mux{"session/prompt": func(context.Context, *acprpc.Request) (any, error) {
		return json.RawMessage(answer), nil
	}}
	l := wiretest.NewWire(t, wiretest.Side{}, wiretest.Side{Handler: agent})
	for round := range 200 {
		callCtx, cancel := context.WithCancel(ctx)
		go cancel()
		var res json.RawMessage
		err := l.A.Call(callCtx, "session/prompt", map[string]any{"sessionId": "s"}, &res)
		if err != nil {
			require.ErrorIs(t, err, acprpc.ErrCancelled, "round %d", round)
			require.Nil(t, res, "round %d", round)
			continue
		}
		require.Equal(t, answer, string(res), "round %d", round)
	}
}

// A prompt call waiting TurnCancelWait (a minute) for the agent to answer
// its cancelled turn ends at once when the connection ends meanwhile: by
// Close, or by the agent's output ending (it exited), with an error that
// matches ErrConnClosed and not ErrCancelled, since no answer can come.
func TestPromptCancelWaitEndsWithTheConnection(t *testing.T) {
	for _, end := range []string{"Close", "input end"} {
		t.Run(end, func(t *testing.T) {
			ctx := wiretest.Context(t)
			c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{TurnCancelWait: time.Hour, InputEndGrace: time.Hour})
			callCtx, cancel := context.WithCancel(ctx)
			done := goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": "s"}, nil)
			p.ExpectRequest(ctx, "session/prompt")
			cancel()
			p.ExpectNotification(ctx, "session/cancel")
			if end == "Close" {
				require.NoError(t, c.Close())
			} else {
				p.CloseWrite()
			}
			err := wiretest.Recv(t, ctx, done)
			assert.ErrorIs(t, err, acprpc.ErrConnClosed)
			assert.NotErrorIs(t, err, acprpc.ErrCancelled)
		})
	}
}

// Many sessions' prompts cancelled at once, against an acprpc agent whose
// turns end with their contexts: every call returns its own turn's
// "cancelled", each session is sent one session/cancel, and nothing is left
// running (goleak).
func TestPromptManySessionsCancelledAtOnce(t *testing.T) {
	ctx := wiretest.Context(t)
	started := make(chan struct{}, 1)
	agent := wiretest.Mux{"session/prompt": func(ctx context.Context, req *acprpc.Request) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return stopReason{"cancelled"}, nil
	}}
	const sessions = 200
	l := wiretest.NewWire(t, wiretest.Side{}, wiretest.Side{Handler: agent})
	callCtx, cancel := context.WithCancel(ctx)
	results := make(chan error, sessions)
	reasons := make([]stopReason, sessions)
	for i := range sessions {
		go func() {
			results <- l.A.Call(callCtx, "session/prompt", map[string]any{"sessionId": fmt.Sprint("s", i)}, &reasons[i])
		}()
	}
	for range sessions {
		wiretest.Recv(t, ctx, (<-chan struct{})(started))
	}
	cancel()
	for range sessions {
		require.NoError(t, wiretest.Recv(t, ctx, results))
	}
	for i, r := range reasons {
		assert.Equal(t, "cancelled", r.StopReason, "session s%d", i)
	}
	assert.EqualValues(t, sessions, l.A.Stats().CancelsSent)
}

// Prompts on one session from 8 goroutines at once, each cancelled as it
// starts, against an acprpc agent whose turns end with their contexts:
// every call returns, with the agent's stop reason or ErrCancelled, and
// the holds behind the cancelled turns neither deadlock nor race.
func TestPromptHoldsStress(t *testing.T) {
	ctx := wiretest.Context(t)
	agent := wiretest.Mux{"session/prompt": func(ctx context.Context, req *acprpc.Request) (any, error) {
		<-ctx.Done()
		return stopReason{"cancelled"}, nil
	}}
	l := wiretest.NewWire(t, wiretest.Side{}, wiretest.Side{Handler: agent})
	const callers, rounds = 8, 25
	errs := make(chan error, callers*rounds)
	for range callers {
		go func() {
			for range rounds {
				callCtx, cancel := context.WithCancel(ctx)
				go cancel()
				var res stopReason
				err := l.A.Call(callCtx, "session/prompt", map[string]any{"sessionId": "s"}, &res)
				if err == nil && res.StopReason != "cancelled" {
					err = fmt.Errorf("stop reason %q", res.StopReason)
				}
				errs <- err
			}
		}()
	}
	for range callers * rounds {
		if err := wiretest.Recv(t, ctx, errs); err != nil {
			require.ErrorIs(t, err, acprpc.ErrCancelled)
		}
	}
}

// CancelSession while a prompt of the session is held, not yet sent: the
// session/cancel goes out before the prompt, so it cancels nothing of that
// prompt's turn, which is not taken for cancelled. An end_turn answer stays
// end_turn under ReportCancelledTurns, and the prompt's context ending
// later sends its own session/cancel. It used to be taken for cancelled:
// the end_turn was reported cancelled, and the context's end sent nothing,
// leaving the agent's turn to run, the call to wait TurnCancelWait.
func TestCancelSessionBeforeAHeldPromptIsSentDoesNotCancelIt(t *testing.T) {
	for _, then := range []string{"answered", "cancelled"} {
		t.Run(then, func(t *testing.T) {
			ctx := wiretest.Context(t)
			held := logSignal{msg: "acprpc: holding a prompt", seen: make(chan struct{})}
			c, p := wiretest.Connect(t, wiretest.Transports[0], pinged(),
				&acprpc.Options{Logger: slog.New(&held), TurnCancelWait: time.Minute, ReportCancelledTurns: true})
			callCtx, cancel := context.WithCancel(ctx)
			done := goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": "s"}, nil, acprpc.WaitAfterCancel(time.Millisecond))
			first := p.ExpectRequest(ctx, "session/prompt")
			cancel()
			p.ExpectNotification(ctx, "session/cancel")
			assert.ErrorIs(t, wiretest.Recv(t, ctx, done), acprpc.ErrCancelled)

			callCtx, cancel = context.WithCancel(ctx)
			defer cancel()
			var res stopReason
			done = goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": "s"}, &res)
			wiretest.Recv(t, ctx, (<-chan struct{})(held.seen))
			require.NoError(t, acprpc.CancelSession(ctx, c, "s"))
			p.ExpectNotification(ctx, "session/cancel")
			p.Respond(string(first.ID), `{"stopReason":"cancelled"}`)
			second := p.ExpectRequest(ctx, "session/prompt") // after the session/cancel
			if then == "answered" {
				p.Respond(string(second.ID), `{"stopReason":"end_turn"}`)
				require.NoError(t, wiretest.Recv(t, ctx, done))
				assert.Equal(t, "end_turn", res.StopReason, "a turn begun after the session/cancel is not reported cancelled")
				return
			}
			cancel()
			p.ExpectNotification(ctx, "session/cancel") // its own
			p.Respond(string(second.ID), `{"stopReason":"cancelled"}`)
			require.NoError(t, wiretest.Recv(t, ctx, done))
			assert.Equal(t, "cancelled", res.StopReason)
		})
	}
}
