package acprpc_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"sync"
	"time"

	"github.com/acpkit/acprpc"
)

// exPipe connects an agent handler and a client handler in memory. Over
// stdio, an agent would use acprpc.NewStreamPipes(os.Stdin, os.Stdout), and
// a client its agent subprocess's stdout and stdin pipes.
func exPipe(agentHandler, clientHandler acprpc.Handler, agentOpts *acprpc.Options) (agent, client *acprpc.Conn) {
	agentEnd, clientEnd := net.Pipe()
	ctx := context.Background()
	agent = acprpc.NewConn(ctx, acprpc.NewStream(agentEnd), agentHandler, agentOpts)
	client = acprpc.NewConn(ctx, acprpc.NewStream(clientEnd), clientHandler, nil)
	return agent, client
}

// An agent serves the client's requests with a Handler; the client, which
// here serves nothing, passes nil and only calls.
func ExampleNewConn() {
	agentEnd, clientEnd := net.Pipe() // an agent subprocess's pipes, in memory
	ctx := context.Background()

	handler := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		switch req.Method {
		case "initialize":
			return map[string]any{"protocolVersion": 1, "agentCapabilities": map[string]any{"loadSession": false}}, nil
		case "session/new":
			return map[string]string{"sessionId": "sess_1"}, nil
		}
		return nil, acprpc.MethodNotFound(req.Method)
	})
	// A real agent: acprpc.NewConn(ctx, acprpc.NewStreamPipes(os.Stdin, os.Stdout), handler, nil),
	// then <-conn.Done() to exit when its stdin closes.
	agent := acprpc.NewConn(ctx, acprpc.NewStream(agentEnd), handler, nil)
	defer agent.Close()
	client := acprpc.NewConn(ctx, acprpc.NewStream(clientEnd), nil, nil)
	defer client.Close()

	var init struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	err := client.Call(ctx, "initialize", map[string]any{"protocolVersion": 1}, &init)
	fmt.Println("protocolVersion:", init.ProtocolVersion, err)

	err = client.Call(ctx, "session/load", map[string]string{"sessionId": "sess_0"}, nil)
	var rpcErr *acprpc.Error
	if errors.As(err, &rpcErr) {
		fmt.Println("session/load:", rpcErr.Code, rpcErr.Message)
	}
	// Output:
	// protocolVersion: 1 <nil>
	// session/load: -32601 Method not found: session/load
}

// Either side calls the other. Here the agent's prompt handler reads a file
// through the client, with ConnFromContext, before ending its turn.
func ExampleConn_Call() {
	agentHandler := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		if req.Method != "session/prompt" {
			return nil, acprpc.MethodNotFound(req.Method)
		}
		var file struct {
			Content string `json:"content"`
		}
		// The handler's own context: cancelling the turn cancels this call.
		err := acprpc.ConnFromContext(ctx).Call(ctx, "fs/read_text_file",
			map[string]string{"sessionId": req.SessionID, "path": "/src/main.go"}, &file)
		if err != nil {
			return nil, err
		}
		fmt.Printf("agent: read %q\n", file.Content)
		return map[string]string{"stopReason": "end_turn"}, nil
	})
	clientHandler := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		if req.Method == "fs/read_text_file" {
			return map[string]string{"content": "package main"}, nil
		}
		return nil, acprpc.MethodNotFound(req.Method)
	})
	agent, client := exPipe(agentHandler, clientHandler, nil)
	defer agent.Close()
	defer client.Close()

	var res struct {
		StopReason string `json:"stopReason"`
	}
	err := client.Call(context.Background(), "session/prompt", map[string]any{
		"sessionId": "sess_1",
		"prompt":    []map[string]string{{"type": "text", "text": "What does main.go do?"}},
	}, &res)
	fmt.Println("client: stopReason:", res.StopReason, err)
	// Output:
	// agent: read "package main"
	// client: stopReason: end_turn <nil>
}

// Ending a Call's context sends the peer $/cancel_request with the call's
// ID; the peer's handler sees its context end with ErrPeerCancelled. With
// WaitAfterCancel the caller also gets the peer's answer: here -32800, as
// the method has no cancellation marker.
func ExampleConn_Call_cancel() {
	started := make(chan struct{})
	agentHandler := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		close(started)
		<-ctx.Done() // the work, abandoned when the request is cancelled
		fmt.Println("agent: cancelled by the peer:", errors.Is(context.Cause(ctx), acprpc.ErrPeerCancelled))
		return nil, ctx.Err()
	})
	agent, client := exPipe(agentHandler, nil, nil)
	defer agent.Close()
	defer client.Close()

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	err := client.Call(ctx, "_example/index_workspace", nil, nil, acprpc.WaitAfterCancel(time.Second))
	fmt.Println("client: cancelled:", errors.Is(err, acprpc.ErrCancelled), errors.Is(err, context.Canceled))
	var rpcErr *acprpc.Error
	if errors.As(err, &rpcErr) {
		fmt.Println("client: the agent answered", rpcErr.Code, rpcErr.Message)
	}
	// Output:
	// agent: cancelled by the peer: true
	// client: cancelled: true true
	// client: the agent answered -32800 Request cancelled
}

// An agent's prompt handler honours its context. Returning ctx.Err() after
// a cancellation lets acprpc answer with the method's marker: for
// session/prompt, {"stopReason":"cancelled"}, never an error. Here the turn
// is ended by the agent's own deadline (Options.HandlerTimeout), an internal
// cancellation, answered the same way.
func ExampleHandlerFunc() {
	prompt := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		select {
		case <-ctx.Done():
			// Why it ended: ErrSessionCancelled, ErrPeerCancelled,
			// ErrDeadline or ErrConnClosed.
			cause := context.Cause(ctx)
			fmt.Println("agent: turn ended:", cause, errors.Is(cause, acprpc.ErrDeadline))
			return nil, ctx.Err()
		case <-time.After(time.Minute): // the model's work
			return map[string]string{"stopReason": "end_turn"}, nil
		}
	})
	agent, client := exPipe(prompt, nil, &acprpc.Options{HandlerTimeout: 20 * time.Millisecond})
	defer agent.Close()
	defer client.Close()

	var res struct {
		StopReason string `json:"stopReason"`
	}
	err := client.Call(context.Background(), "session/prompt",
		map[string]any{"sessionId": "sess_1", "prompt": []any{}}, &res)
	fmt.Println("client: stopReason:", res.StopReason, err)
	// Output:
	// agent: turn ended: acprpc: handler deadline exceeded true
	// client: stopReason: cancelled <nil>
}

// A client cancels a prompt turn with CancelSession: the agent is sent
// session/cancel, and the client's own pending session/request_permission
// for that session is answered with the cancelled outcome. The agent's turn
// ends with stopReason "cancelled", after its last updates, which the client
// has all handled when Call returns.
func ExampleCancelSession() {
	agentHandler := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		if req.Method != "session/prompt" {
			return nil, nil // session/cancel goes by here too; acprpc has acted on it
		}
		conn := acprpc.ConnFromContext(ctx)
		say := func(ctx context.Context, text string) {
			_ = conn.Notify(ctx, "session/update", map[string]any{"sessionId": req.SessionID,
				"update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]string{"type": "text", "text": text}}})
		}
		say(ctx, "I need to run a tool.")
		var perm struct {
			Outcome struct {
				Outcome string `json:"outcome"`
			} `json:"outcome"`
		}
		// Under the turn's context: the turn's cancellation cancels the
		// request, and WaitAfterCancel waits for the client's answer.
		err := conn.Call(ctx, "session/request_permission", map[string]any{
			"sessionId": req.SessionID,
			"toolCall":  map[string]string{"toolCallId": "call_1"},
			"options":   []map[string]string{{"optionId": "allow", "name": "Allow", "kind": "allow_once"}},
		}, &perm, acprpc.WaitAfterCancel(time.Second))
		fmt.Println("agent: permission outcome:", perm.Outcome.Outcome, err)
		if ctx.Err() != nil {
			fmt.Println("agent: cause:", context.Cause(ctx))
			say(context.WithoutCancel(ctx), "Stopped.") // flushed before the answer
			return map[string]string{"stopReason": "cancelled"}, nil
		}
		return map[string]string{"stopReason": "end_turn"}, nil
	})

	asked := make(chan struct{})
	var mu sync.Mutex
	var updates []string
	clientHandler := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		switch req.Method {
		case "session/update":
			mu.Lock()
			updates = append(updates, string(req.Params))
			mu.Unlock()
			return nil, nil
		case "session/request_permission":
			close(asked)
			<-ctx.Done()          // the user has not answered yet
			return nil, ctx.Err() // acprpc answers {"outcome":{"outcome":"cancelled"}}
		}
		return nil, acprpc.MethodNotFound(req.Method)
	})
	agent, client := exPipe(agentHandler, clientHandler, nil)
	defer agent.Close()
	defer client.Close()

	ctx := context.Background()
	go func() {
		<-asked // the user presses Stop while the permission dialog is open
		_ = acprpc.CancelSession(ctx, client, "sess_1")
	}()
	var res struct {
		StopReason string `json:"stopReason"`
	}
	err := client.Call(ctx, "session/prompt", map[string]any{
		"sessionId": "sess_1",
		"prompt":    []map[string]string{{"type": "text", "text": "Clean up the build"}},
	}, &res)
	mu.Lock()
	fmt.Println("client: updates before the answer:", len(updates))
	mu.Unlock()
	fmt.Println("client: stopReason:", res.StopReason, err)
	// Output:
	// agent: permission outcome: cancelled <nil>
	// agent: cause: acprpc: session cancelled
	// client: updates before the answer: 2
	// client: stopReason: cancelled <nil>
}

// ServeStdio is an agent's whole life: it serves the client over stdin and
// stdout until the client closes them.
func ExampleServeStdio() {
	router := acprpc.NewRouter()
	router.Register("session/prompt", acprpc.RequestHandler(func(ctx context.Context, p exPromptRequest) (exPromptResponse, error) {
		return exPromptResponse{StopReason: "end_turn"}, nil
	}))
	if err := acprpc.ServeStdio(context.Background(), router, nil); err != nil {
		log.Fatal(err)
	}
}
