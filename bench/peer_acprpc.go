//go:build acprpc_ready

package bench

// TODO: adapter for github.com/acpkit/acprpc, to be written against its API
// once the library builds: serve with acprpc.NewConn over
// acprpc.NewStreamPipes(r, w) and a HandlerFunc that runs Workload.Prompt;
// dial with a second Conn whose handler counts session/update; Prompt calls
// conn.Call(ctx, "session/prompt", ...). Then drop the build tag and add the
// require/replace lines to go.mod.
