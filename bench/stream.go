package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
)

// The stream workload: a prompt turn that streams its answer as many small
// agent_message_chunk updates, as a model's tokens arrive, with a
// tool_call_update every so many chunks, then ends end_turn; a turn
// cancelled on the way ends cancelled. Each peer's agent writes it in its
// SDK's own idiom, each update sent as its SDK sends one and awaited, and
// nothing else: acpbench stream drives them all with one raw-wire client.
// ts/stream-agent.mjs is the TypeScript SDK's, with the same chunks.

// StreamSpec is what one streaming turn sends: N chunks, a tool_call_update
// after every Tool chunks (0 for none), the chunks' sizes drawn from Seed.
type StreamSpec struct {
	N, Tool int
	Seed    uint32
}

const textStreamPrefix = "stream "

// Text is the prompt text that asks an agent for the turn.
func (s StreamSpec) Text() string {
	return fmt.Sprintf("%s%d %d %d", textStreamPrefix, s.N, s.Tool, s.Seed)
}

// ParseStreamText reads a prompt text made by StreamSpec.Text.
func ParseStreamText(text string) (StreamSpec, bool) {
	rest, ok := strings.CutPrefix(text, textStreamPrefix)
	f := strings.Fields(rest)
	if !ok || len(f) != 3 {
		return StreamSpec{}, false
	}
	n, err1 := strconv.Atoi(f[0])
	tool, err2 := strconv.Atoi(f[1])
	seed, err3 := strconv.ParseUint(f[2], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return StreamSpec{}, false
	}
	return StreamSpec{N: n, Tool: tool, Seed: uint32(seed)}, true
}

// chunkPad is what fills a chunk after its number.
const chunkPad = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"

// Chunk is the text of chunk i: its number, a colon, and letters up to a
// size of 16 to 64 bytes. ts/stream-agent.mjs computes the same.
func (s StreamSpec) Chunk(i int) string {
	size := 16 + int((uint32(i)*2654435761+s.Seed)%49)
	head := strconv.Itoa(i) + ":"
	return head + chunkPad[:size-len(head)]
}

// ToolAfter reports whether a tool_call_update follows chunk i.
func (s StreamSpec) ToolAfter(i int) bool { return s.Tool > 0 && (i+1)%s.Tool == 0 }

// stamps is where the stream agents write their stamps: the server's
// stderr, which acpbench reads.
var stamps io.Writer = os.Stderr

// stampAllocs writes "M <objects>" to stderr: the heap objects the process
// has allocated so far, read without stopping the world. acpbench takes
// the difference between two prompts' stamps as the first one's turn.
func stampAllocs() {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}
	metrics.Read(s)
	fmt.Fprintf(stamps, "M %d\n", s[0].Value.Uint64())
}

// stampStop writes "B <ns>" to stderr as the agent reads a session/cancel
// and "C <ns>" as a turn's handler sees its cancel, on CLOCK_MONOTONIC
// (MonoNow), so that acpbench can tell the cancel's wait for the agent's read
// loop from the rest of the stop.
func stampStop(tag byte) { fmt.Fprintf(stamps, "%c %d\n", tag, MonoNow()) }

// ServeAcprpcStream serves the stream workload with acprpc on r and w, and
// returns a channel closed once the connection has ended. opts, if not nil,
// are the Conn's options; their Hooks are the stream's own.
func ServeAcprpcStream(r io.Reader, w io.Writer, opts *acprpc.Options) <-chan struct{} {
	h, opts := AcprpcStream(opts)
	return acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(r, w), h, opts).Done()
}

// AcprpcStream returns the stream workload's agent on acprpc and the
// options to serve it with: opts (nil for the defaults) with the stream's
// Hooks, which stamp each session/cancel as it is read. Over stdio
// ServeAcprpcStream serves it; remotebench.NewStreamServer serves it with
// remote.Server.
func AcprpcStream(opts *acprpc.Options) (acprpc.Handler, *acprpc.Options) {
	if opts == nil {
		opts = &acprpc.Options{}
	}
	opts.Hooks.Received = func(_ context.Context, m *acprpc.Message) {
		if m.Method == acpv1.MethodSessionCancel {
			stampStop('B')
		}
	}
	var sessions atomic.Int64
	agent := acpv1.Agent{
		SessionPrompt: streamPrompt,
		Initialize: func(context.Context, acpv1.InitializeRequest) (acpv1.InitializeResponse, error) {
			return acpv1.InitializeResponse{ProtocolVersion: 1}, nil
		},
		SessionNew: func(context.Context, acpv1.NewSessionRequest) (acpv1.NewSessionResponse, error) {
			return acpv1.NewSessionResponse{SessionID: acpv1.SessionID(newStreamSession(&sessions))}, nil
		},
	}
	return agent.Router(), opts
}

// streamPrompt is the stream workload's turn on acprpc.
func streamPrompt(ctx context.Context, p acpv1.PromptRequest) (acpv1.PromptResponse, error) {
	stampAllocs()
	spec, _ := ParseStreamText(acpv1.TextOf(p.Prompt))
	conn := acprpc.ConnFromContext(ctx)
	for i := range spec.N {
		if acpv1.ToClient.SessionUpdate.Notify(ctx, conn, acpv1.AgentText(p.SessionID, spec.Chunk(i))) != nil {
			stampStop('C')
			return acpv1.PromptResponse{StopReason: acpv1.StopReasonCancelled}, nil
		}
		if spec.ToolAfter(i) {
			update := acpv1.SessionUpdate{Value: acpv1.ToolCallUpdate{ToolCallID: "call_1", Status: acpv1.ToolCallStatusInProgress}}
			if acpv1.ToClient.SessionUpdate.Notify(ctx, conn, acpv1.SessionNotification{SessionID: p.SessionID, Update: update}) != nil {
				stampStop('C')
				return acpv1.PromptResponse{StopReason: acpv1.StopReasonCancelled}, nil
			}
		}
	}
	return acpv1.PromptResponse{StopReason: acpv1.StopReasonEndTurn}, nil
}

// newStreamSession names a new session: s1, s2 and so on.
func newStreamSession(sessions *atomic.Int64) string {
	return "s" + strconv.FormatInt(sessions.Add(1), 10)
}

// coderStreamAgent serves the stream workload with coder's agent side.
type coderStreamAgent struct {
	coderAgent
	sessions atomic.Int64
}

func (a *coderStreamAgent) NewSession(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	return acp.NewSessionResponse{SessionId: acp.SessionId(newStreamSession(&a.sessions))}, nil
}

// ServeCoderStream serves the stream workload with coder's SDK on r and w
// and returns a channel closed once the connection has ended.
func ServeCoderStream(r io.Reader, w io.Writer) <-chan struct{} {
	a := &coderStreamAgent{}
	a.conn = acp.NewAgentSideConnection(a, w, r)
	a.conn.SetLogger(coderQuiet)
	return a.conn.Done()
}

// Cancel stamps the session/cancel as coder hands it over, once it has
// cancelled the turn's context.
func (a *coderStreamAgent) Cancel(context.Context, acp.CancelNotification) error {
	stampStop('B')
	return nil
}

func (a *coderStreamAgent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	stampAllocs()
	text := ""
	if len(p.Prompt) > 0 && p.Prompt[0].Text != nil {
		text = p.Prompt[0].Text.Text
	}
	spec, _ := ParseStreamText(text)
	for i := range spec.N {
		if a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: acp.UpdateAgentMessageText(spec.Chunk(i))}) != nil {
			stampStop('C')
			return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
		}
		if spec.ToolAfter(i) {
			update := acp.UpdateToolCall("call_1", acp.WithUpdateStatus(acp.ToolCallStatusInProgress))
			if a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: update}) != nil {
				stampStop('C')
				return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
			}
		}
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}
