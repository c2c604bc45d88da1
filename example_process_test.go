package acprpc_test

import (
	"context"
	"errors"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"github.com/acpkit/acprpc"
)

// A client starts its agent as a subprocess: the connection runs over the
// agent's stdin and stdout, the agent's stderr goes to the client's log one
// line at a time, and Close closes the agent's stdin, waits for it to exit,
// and sends SIGTERM, then SIGKILL, to its process group if it does not.
func ExampleStartAgent() {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))

	client := acprpc.NewRouter()
	client.Register("session/update", acprpc.NotificationHandler(func(ctx context.Context, n exSessionNotification) {
		logger.Info("update", "session", n.SessionID)
	}))

	agent, err := acprpc.StartAgent(ctx, exec.Command("my-agent", "--acp"), client, &acprpc.ProcessOptions{
		Conn:        &acprpc.Options{Logger: logger},
		StderrLog:   logger.With("agent", "my-agent"),
		ExitTimeout: 2 * time.Second,
	})
	if err != nil {
		log.Fatal(err) // the command could not be started
	}
	defer func() {
		if err := agent.Close(); errors.Is(err, acprpc.ErrAgentKilled) {
			logger.Warn("the agent had to be killed", "error", err)
		}
	}()

	init, err := acprpc.CallFor[exInitializeResponse](ctx, agent.Conn, "initialize", exInitializeRequest{ProtocolVersion: 1})
	if errors.Is(err, acprpc.ErrConnClosed) {
		// The agent exited before it answered: Wait says how.
		logger.Error("the agent exited", "status", agent.Wait())
		return
	}
	logger.Info("initialized", "protocolVersion", init.ProtocolVersion)
}

type exSessionNotification struct {
	SessionID string `json:"sessionId"`
}

// WithAgent is a client's whole conversation with its agent: the agent
// starts, f runs, and the agent is ended however f returns.
func ExampleWithAgent() {
	err := acprpc.WithAgent(context.Background(), exec.Command("my-agent"), nil, nil, func(ctx context.Context, conn *acprpc.Conn) error {
		_, err := acprpc.CallFor[exInitializeResponse](ctx, conn, "initialize", exInitializeRequest{ProtocolVersion: 1})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
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
