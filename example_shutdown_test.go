package acprpc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/acpkit/acprpc"
)

// An agent told to stop shuts down gracefully: the turn in flight is
// cancelled with cause ErrShutdown and answered {"stopReason":"cancelled"},
// which the client reads before the connection closes.
func ExampleConn_Shutdown() {
	turnStarted := make(chan struct{})
	router := acprpc.NewRouter()
	router.Register("session/prompt", acprpc.RequestHandler(
		func(ctx context.Context, p exPromptRequest) (exPromptResponse, error) {
			close(turnStarted)
			<-ctx.Done() // the turn works until it is cancelled
			fmt.Println("agent: turn cancelled:", errors.Is(context.Cause(ctx), acprpc.ErrShutdown))
			return exPromptResponse{StopReason: "cancelled"}, nil
		}))

	agentEnd, clientEnd := net.Pipe()
	ctx := context.Background()
	agent := acprpc.NewConn(ctx, acprpc.NewStream(agentEnd), router, nil)
	client := acprpc.NewConn(ctx, acprpc.NewStream(clientEnd), nil, nil)
	defer client.Close()

	turn := make(chan exPromptResponse)
	go func() {
		res, _ := acprpc.CallFor[exPromptResponse](ctx, client, "session/prompt", exPromptRequest{SessionID: "s"})
		turn <- res
	}()
	<-turnStarted

	// On SIGTERM, say:
	grace, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := agent.Shutdown(grace)
	fmt.Println("agent: shut down:", err)
	fmt.Println("client: stopReason:", (<-turn).StopReason)
	// Output:
	// agent: turn cancelled: true
	// agent: shut down: <nil>
	// client: stopReason: cancelled
}

// An application cancels one request itself, here when a budget is spent:
// the handler's context ends with the application's cause, and the client
// receives the method's marker.
func ExampleConn_CancelRequest() {
	errBudgetSpent := errors.New("token budget spent")
	started := make(chan acprpc.ID, 1)
	router := acprpc.NewRouter()
	router.Register("session/prompt", acprpc.RequestHandler(
		func(ctx context.Context, p exPromptRequest) (exPromptResponse, error) {
			req, _ := acprpc.RequestFromContext(ctx)
			started <- req.ID
			<-ctx.Done()
			fmt.Println("agent: cause:", context.Cause(ctx))
			return exPromptResponse{}, context.Cause(ctx) // an error after a cancel: the marker
		}))

	agentEnd, clientEnd := net.Pipe()
	ctx := context.Background()
	agent := acprpc.NewConn(ctx, acprpc.NewStream(agentEnd), router, nil)
	defer agent.Close()
	client := acprpc.NewConn(ctx, acprpc.NewStream(clientEnd), nil, nil)
	defer client.Close()

	go func() { agent.CancelRequest(<-started, errBudgetSpent) }()
	res, err := acprpc.CallFor[exPromptResponse](ctx, client, "session/prompt", exPromptRequest{SessionID: "s"})
	fmt.Println("client: stopReason:", res.StopReason, err)
	// Output:
	// agent: cause: token budget spent
	// client: stopReason: cancelled <nil>
}
