// Package agentproc runs an ACP agent as a subprocess of its client, with an
// acprpc.Conn over the agent's stdin and stdout.
//
// Start starts the agent and returns a Process: the connection, with the
// agent's exit (Exited, Wait) and its end (Close). Run is a client's whole
// conversation in one call: the agent starts, a function runs with the
// connection, and the agent is closed however the function returns.
//
//	err := agentproc.Run(ctx, exec.Command("my-agent"), client.Router(), nil, func(ctx context.Context, conn *acprpc.Conn) error {
//		_, err := acpv1.ToAgent.Initialize.Call(ctx, conn, acpv1.InitializeRequest{ProtocolVersion: acpv1.Version})
//		return err
//	})
//
// Close ends the agent the way ACP asks, by closing its stdin, and escalates
// to SIGTERM and then SIGKILL for an agent that does not exit (real agents
// exit only on SIGTERM once they hold a session). On Unix the agent runs in a
// process group of its own, which is signalled whole and killed once the
// agent has exited, so no child of the agent outlives it.
//
// The package uses only acprpc's public API: a client whose agent arrives
// over other pipes uses acprpc.NewConn and acprpc.NewStreamPipes itself.
package agentproc
