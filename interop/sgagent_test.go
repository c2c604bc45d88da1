package interop

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/acpkit/acprpc/sourcegraph"
)

// sourcegraphAgentEnv, when set, makes the test binary an ACP agent on
// sourcegraph/jsonrpc2's engine with the sourcegraph package, on its stdin
// and stdout, for client.ts to run in place of examples/agent.
const sourcegraphAgentEnv = "ACPRPC_INTEROP_SOURCEGRAPH_AGENT"

// goAgent is a Go agent command that client.ts runs.
type goAgent struct {
	name    string
	command func() []string
	env     []string
}

// goAgents are the Go agents every client.ts scenario runs against: the
// example agent on acprpc's engine, and the test binary itself as an agent
// on sourcegraph's engine.
var goAgents = []goAgent{
	{name: "acprpc", command: func() []string { return []string{agentBin, "-v"} }},
	{name: "sourcegraph", command: func() []string { return []string{os.Args[0]} }, env: []string{sourcegraphAgentEnv + "=1"}},
}

// stdio is the process's stdin and stdout as one stream.
type stdio struct {
	io.Reader
	io.Writer
}

func (stdio) Close() error { return errors.Join(os.Stdout.Close(), os.Stdin.Close()) }

// runSourcegraphAgent serves ACP v1 until stdin ends, as examples/agent
// does for the scenarios of client.ts: a prompt sends one update, asks for
// permission and creates a terminal, both at once; a prompt with "slow" in
// it then waits for its cancel. Its handler is a plain
// jsonrpc2.HandlerWithError that returns the context's error when
// cancelled: the Layer turns that into the cancelled stop reason, and its
// calls' $/cancel_request are sourcegraph.Call's.
func runSourcegraphAgent() int {
	a := &sgAgent{}
	conn := sourcegraph.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(stdio{os.Stdin, os.Stdout}),
		jsonrpc2.HandlerWithError(a.handle), nil, jsonrpc2.SetLogger(log.New(os.Stderr, "sourcegraph agent: ", 0)))
	<-conn.DisconnectNotify()
	return 0
}

type sgAgent struct{ sessions atomic.Int64 }

func (a *sgAgent) handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	switch req.Method {
	case "initialize":
		return map[string]any{"protocolVersion": 1, "agentCapabilities": map[string]any{"loadSession": false}, "authMethods": []any{}}, nil
	case "session/new":
		return map[string]string{"sessionId": "sg_sess_" + strconv.FormatInt(a.sessions.Add(1), 10)}, nil
	case "session/prompt":
		return a.prompt(ctx, conn, req)
	}
	if req.Notif {
		return nil, nil // session/cancel: the Layer has cancelled the session's prompt already
	}
	return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "Method not found: " + req.Method}
}

func (a *sgAgent) prompt(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		Prompt    []struct {
			Text string `json:"text"`
		} `json:"prompt"`
	}
	if req.Params == nil || json.Unmarshal(*req.Params, &p) != nil {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: "Invalid params"}
	}
	if err := conn.Notify(ctx, "session/update", map[string]any{"sessionId": p.SessionID,
		"update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]string{"type": "text", "text": "working on it"}}}); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = sourcegraph.Call(ctx, conn, "session/request_permission", map[string]any{"sessionId": p.SessionID,
			"toolCall": map[string]string{"toolCallId": "call_1", "title": "Run sleep 30", "kind": "execute", "status": "pending"},
			"options": []map[string]string{
				{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
				{"optionId": "reject", "name": "Reject", "kind": "reject_once"},
			}}, nil)
	})
	wg.Go(func() {
		_ = sourcegraph.Call(ctx, conn, "terminal/create", map[string]any{"sessionId": p.SessionID, "command": "sleep", "args": []string{"30"}}, nil)
	})
	wg.Wait()
	if len(p.Prompt) > 0 && strings.Contains(p.Prompt[0].Text, "slow") {
		<-ctx.Done()
	}
	if err := ctx.Err(); err != nil {
		return nil, err // answered {"stopReason":"cancelled"} by the Layer
	}
	return map[string]string{"stopReason": "end_turn"}, nil
}
