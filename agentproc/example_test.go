package agentproc_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/agentproc"
)

// A client starts its agent as a subprocess: the connection runs over the
// agent's stdin and stdout, the agent's stderr goes to the client's log one
// line at a time, and Close closes the agent's stdin, waits for it to exit,
// and sends SIGTERM, then SIGKILL, to its process group if it does not.
func ExampleStart() {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))

	client := acpv1.Client{SessionUpdate: func(_ context.Context, n acpv1.SessionNotification) {
		logger.Info("update", "session", n.SessionID)
	}}
	agent, err := agentproc.Start(ctx, exec.Command("my-agent", "--acp"), client.Router(), &agentproc.Options{
		Conn:        &acprpc.Options{Logger: logger},
		StderrLog:   logger.With("agent", "my-agent"),
		ExitTimeout: 2 * time.Second,
	})
	if err != nil {
		log.Fatal(err) // the command could not be started
	}
	defer func() {
		if err := agent.Close(); errors.Is(err, agentproc.ErrKilled) {
			logger.Warn("the agent had to be killed", "error", err)
		}
	}()

	init, err := acpv1.ToAgent.Initialize.Call(ctx, agent.Conn, acpv1.InitializeRequest{ProtocolVersion: acpv1.Version})
	if errors.Is(err, agentproc.ErrExited) {
		// The agent exited before it answered: the error carries its status.
		logger.Error("the agent exited", "error", err)
		return
	}
	logger.Info("initialized", "protocolVersion", init.ProtocolVersion)
}

// Run is a client's whole conversation with its agent: the agent starts, f
// runs, and the agent is ended however f returns.
func ExampleRun() {
	err := agentproc.Run(context.Background(), exec.Command("my-agent"), nil, nil, func(ctx context.Context, conn *acprpc.Conn) error {
		init, err := acpv1.ToAgent.Initialize.Call(ctx, conn, acpv1.InitializeRequest{ProtocolVersion: acpv1.Version})
		if err != nil {
			return err
		}
		fmt.Println("the agent speaks version", init.ProtocolVersion)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}
