package remote_test

import (
	"context"
	"fmt"
	"net"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/remote"
)

// An agent served over WebSocket and Streamable HTTP at one endpoint, and a
// client connecting to it over each.
func Example() {
	agent := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		switch req.Method {
		case "initialize":
			return map[string]int{"protocolVersion": 1}, nil
		case "session/prompt":
			return map[string]string{"stopReason": "end_turn"}, nil
		}
		return nil, acprpc.MethodNotFound(req.Method)
	})
	srv := remote.NewServer(remote.Handle(agent, nil), nil) // loopback peers only, by default
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(l)
	defer srv.Close()

	ctx := context.Background()
	for _, scheme := range []string{"ws", "http"} {
		t, err := remote.Dial(ctx, scheme+"://"+l.Addr().String()+"/acp", nil)
		if err != nil {
			panic(err)
		}
		client := acprpc.NewConn(ctx, t, nil, nil)
		var res struct {
			StopReason string `json:"stopReason"`
		}
		if err := client.Call(ctx, "initialize", map[string]int{"protocolVersion": 1}, nil); err != nil {
			panic(err)
		}
		if err := client.Call(ctx, "session/prompt", map[string]string{"sessionId": "s1"}, &res); err != nil {
			panic(err)
		}
		fmt.Println(scheme, res.StopReason)
		client.Close()
	}
	// Output:
	// ws end_turn
	// http end_turn
}
