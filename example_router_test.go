package acprpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/acpkit/acprpc"
)

// The shapes of ACP's messages that the router examples use.
type (
	exInitializeRequest struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	exInitializeResponse struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	exPromptRequest struct {
		SessionID string `json:"sessionId"`
		Prompt    []struct {
			Text string `json:"text"`
		} `json:"prompt"`
	}
	exPromptResponse struct {
		StopReason string `json:"stopReason"`
	}
	exCancelNotification struct {
		SessionID string `json:"sessionId"`
	}
)

// An agent serves one typed function per method. Params are decoded once,
// before the function runs; params that do not fit are answered -32602, and
// a method nobody registered -32601.
func ExampleRouter() {
	router := acprpc.NewRouter()
	router.Register("initialize", acprpc.RequestHandler(
		func(ctx context.Context, p exInitializeRequest) (exInitializeResponse, error) {
			return exInitializeResponse{ProtocolVersion: min(p.ProtocolVersion, 1)}, nil
		}))
	router.Register("session/prompt", acprpc.RequestHandler(
		func(ctx context.Context, p exPromptRequest) (exPromptResponse, error) {
			if len(p.Prompt) == 0 {
				return exPromptResponse{}, acprpc.NewError(acprpc.CodeInvalidParams, "Invalid params: an empty prompt")
			}
			return exPromptResponse{StopReason: "end_turn"}, nil
		}))
	router.Register("session/cancel", acprpc.NotificationHandler(
		func(ctx context.Context, p exCancelNotification) {
			// The connection has already cancelled the session's requests.
		}))

	agentEnd, clientEnd := net.Pipe() // over stdio: acprpc.NewStreamPipes(os.Stdin, os.Stdout)
	ctx := context.Background()
	agent := acprpc.NewConn(ctx, acprpc.NewStream(agentEnd), router, nil)
	defer agent.Close()
	client := acprpc.NewConn(ctx, acprpc.NewStream(clientEnd), nil, nil)
	defer client.Close()

	init, err := acprpc.CallFor[exInitializeResponse](ctx, client, "initialize", exInitializeRequest{ProtocolVersion: 2})
	fmt.Println("protocolVersion:", init.ProtocolVersion, err)
	_, err = acprpc.CallFor[exPromptResponse](ctx, client, "session/prompt", map[string]any{"sessionId": 1})
	fmt.Println(errorCode(err))
	_, err = acprpc.CallFor[exPromptResponse](ctx, client, "session/load", nil)
	fmt.Println(errorCode(err))
	// Output:
	// protocolVersion: 1 <nil>
	// -32602
	// -32601
}

// errorCode is the code of the peer's error answer.
func errorCode(err error) int64 {
	var rpcErr *acprpc.Error
	if errors.As(err, &rpcErr) {
		return rpcErr.Code
	}
	return 0
}

// CallFor is Call with the result as a return value: an agent asks its
// client for permission in one line.
func ExampleCallFor() {
	type permissionResponse struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	clientRouter := acprpc.NewRouter()
	clientRouter.Register("session/request_permission", acprpc.RequestHandler(
		func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"outcome":{"outcome":"selected","optionId":"allow"}}`), nil
		}))

	agentEnd, clientEnd := net.Pipe()
	ctx := context.Background()
	agent := acprpc.NewConn(ctx, acprpc.NewStream(agentEnd), nil, nil)
	defer agent.Close()
	client := acprpc.NewConn(ctx, acprpc.NewStream(clientEnd), clientRouter, nil)
	defer client.Close()

	perm, err := acprpc.CallFor[permissionResponse](ctx, agent, "session/request_permission",
		map[string]any{"sessionId": "sess_1", "options": []any{}})
	fmt.Println(perm.Outcome.Outcome, perm.Outcome.OptionID, err)
	// Output: selected allow <nil>
}

// A plain function is registered through HandlerFunc: given the function
// itself, Register does not compile ("missing method Handle").
func ExampleRouter_Register() {
	router := acprpc.NewRouter()
	ping := func(ctx context.Context, req *acprpc.Request) (any, error) { return "pong", nil }
	router.Register("_my/ping", acprpc.HandlerFunc(ping)) // not router.Register("_my/ping", ping)

	agentEnd, clientEnd := net.Pipe()
	ctx := context.Background()
	agent := acprpc.NewConn(ctx, acprpc.NewStream(agentEnd), router, nil)
	defer agent.Close()
	client := acprpc.NewConn(ctx, acprpc.NewStream(clientEnd), nil, nil)
	defer client.Close()

	fmt.Println(acprpc.CallFor[string](ctx, client, "_my/ping", nil))
	// Output: pong <nil>
}

// An SDK registers the methods it knows and hands the rest (here, ACP's
// extension methods, whose names start with "_") to a fallback. Methods can
// be registered and removed while the connection runs.
func ExampleRouter_SetFallback() {
	router := acprpc.NewRouter()
	router.SetFallback(acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		if name, ok := strings.CutPrefix(req.Method, "_"); ok {
			return map[string]string{"extension": name}, nil
		}
		return nil, acprpc.MethodNotFound(req.Method)
	}))

	agentEnd, clientEnd := net.Pipe()
	ctx := context.Background()
	agent := acprpc.NewConn(ctx, acprpc.NewStream(agentEnd), router, nil)
	defer agent.Close()
	client := acprpc.NewConn(ctx, acprpc.NewStream(clientEnd), nil, nil)
	defer client.Close()

	ext, err := acprpc.CallFor[map[string]string](ctx, client, "_zed/status", nil)
	fmt.Println(ext, err)

	// Once initialize has said the peer may use it, a method appears.
	router.Register("session/set_mode", acprpc.RequestHandler(
		func(ctx context.Context, p exCancelNotification) (any, error) { return nil, nil }))
	_, err = acprpc.CallFor[any](ctx, client, "session/set_mode", exCancelNotification{SessionID: "s"})
	fmt.Println(err)
	// Output:
	// map[extension:zed/status] <nil>
	// <nil>
}
