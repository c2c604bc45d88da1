//go:build unix

package agentproc_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/agentproc"
	"github.com/acpkit/acprpc/internal/interoptest"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// The agents of these tests are this test binary itself, run again with
// helperAgentEnv naming how the agent behaves (see TestHelperAgent).
const helperAgentEnv = "ACPRPC_TEST_HELPER_AGENT"

// helperAgent returns the command that runs the test agent in mode.
func helperAgent(mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAgent$")
	// Under the race detector a process sleeps a second before it exits,
	// unless told not to.
	cmd.Env = append(os.Environ(), helperAgentEnv+"="+mode, "GORACE=atexit_sleep_ms=0")
	return cmd
}

// TestHelperAgent is not a test: it is the test agent, when the binary is
// run by helperAgent. Modes:
//
//	serve        serve echo and stderr requests; exit 0 when stdin ends
//	stdio        serve as serve does, with ServeStdio; exit 0 when it returns nil, 6 otherwise
//	chatty       write two stderr lines, serve, and write one without its newline at exit
//	exit-early   write "no API key" to stderr and exit with status 3 at once
//	asks-then-exits  write a request to stdout (x/ask, ID 1), then exit with status 3 at once
//	ignore-eof   serve, and neither exit when stdin ends nor on SIGTERM
//	junk         write lines that are not messages to stdout, then serve
//	loud-exit    serve; when stdin ends, write 1 MiB to stdout, then exit 0
//	lingers      start a child, serve, and stay when stdin ends, until SIGTERM
//	orphans      start a child, serve, and exit 0 when stdin ends, leaving the child
//	child        ignore SIGTERM and run until killed (the child of lingers and orphans)
//	tends-child  start a polite-child, serve, stay when stdin ends; on SIGTERM wait for the child, then exit 0
//	polite-child run until SIGTERM, then exit 0
//	fails-on-term serve, stay when stdin ends; on SIGTERM exit 1
//	leaves-group start a child, join this process's group, leaving the child in
//	             its own; serve, and stay when stdin ends, until SIGTERM
//	heavy        as lingers, with a heavy-child, served once the child holds its memory
//	heavy-child  as child, holding 1 GiB of memory, which takes the kernel a
//	             while to give back once it is killed; says so on stdout
//
// In lingers and orphans, "child" answers the child's process ID, and the
// child holds descriptor 3, which the test passes to the agent (see
// watchTree).
func TestHelperAgent(t *testing.T) {
	mode := os.Getenv(helperAgentEnv)
	if mode == "" {
		t.Skip("the test agent runs only as a subprocess of the process tests")
	}
	os.Exit(runHelperAgent(mode))
}

func runHelperAgent(mode string) int {
	switch mode {
	case "exit-early":
		fmt.Fprintln(os.Stderr, "no API key")
		return 3
	case "asks-then-exits":
		fmt.Println(`{"jsonrpc":"2.0","id":1,"method":"x/ask","params":{}}`)
		return 3
	case "chatty":
		fmt.Fprint(os.Stderr, "line one\nline two\r\n")
	case "junk":
		fmt.Fprint(os.Stdout, "this is not JSON\n[1,2]\n"+`{"jsonrpc":"2.0","id":99,"result":"to nothing"}`+"\n")
	case "ignore-eof":
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
	case "child":
		signal.Ignore(syscall.SIGTERM)
		waitForever()
	case "heavy-child":
		signal.Ignore(syscall.SIGTERM)
		if err := holdMemory(1 << 30); err != nil {
			fmt.Fprintln(os.Stderr, "holding memory:", err)
			return 5
		}
		fmt.Println("holding")
		waitForever()
	case "polite-child":
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		<-term
		return 0
	}
	term := make(chan os.Signal, 1)
	if mode == "tends-child" || mode == "fails-on-term" {
		signal.Notify(term, syscall.SIGTERM) // before it serves: Close may come at once
	}
	childPid := 0
	var child *exec.Cmd
	if mode == "lingers" || mode == "orphans" || mode == "tends-child" || mode == "leaves-group" || mode == "heavy" {
		child = helperAgent("child")
		switch mode {
		case "tends-child":
			child = helperAgent("polite-child")
		case "heavy":
			child = helperAgent("heavy-child")
		}
		child.ExtraFiles = []*os.File{os.NewFile(3, "tree")}
		if err := startChild(child); err != nil {
			fmt.Fprintln(os.Stderr, "starting the child:", err)
			return 5
		}
		childPid = child.Process.Pid
	}
	if mode == "leaves-group" {
		// A group leader cannot start a session or a group of its own: it
		// can only join another group of its session, here its parent's.
		pgid, err := syscall.Getpgid(os.Getppid())
		if err == nil {
			err = syscall.Setpgid(0, pgid)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "leaving the group:", err)
			return 5
		}
	}
	h := wiretest.Mux{
		"child": func(context.Context, *acprpc.Request) (any, error) { return childPid, nil },
		"echo":  wiretest.Echo,
		"block": wiretest.Hold(nil),
		"stderr": func(_ context.Context, req *acprpc.Request) (any, error) {
			fmt.Fprintln(os.Stderr, string(req.Params))
			return true, nil
		},
	}
	if mode == "stdio" {
		if err := acprpc.ServeStdio(context.Background(), h, nil); err != nil {
			fmt.Fprintln(os.Stderr, "ServeStdio:", err)
			return 6
		}
		return 0
	}
	// The connection closes what it is given: the agent keeps its stdout
	// open for what it writes after the connection has ended.
	stdout := struct{ io.Writer }{os.Stdout}
	conn := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(os.Stdin, stdout), h, nil)
	<-conn.Done()
	_ = conn.Close()
	switch mode {
	case "ignore-eof", "lingers", "leaves-group", "heavy":
		waitForever()
	case "tends-child":
		// A parent that ends its children before itself, as it should:
		// it exits once its child has, and so needs the child to have had
		// the SIGTERM too.
		<-term
		_ = child.Wait()
	case "fails-on-term":
		<-term
		return 1
	case "chatty":
		fmt.Fprint(os.Stderr, "bye, with no newline")
	case "loud-exit":
		if _, err := os.Stdout.Write(bytes.Repeat([]byte("after the end\n"), (1<<20)/14)); err != nil {
			return 4
		}
	}
	return 0
}

// startChild starts child; a heavy-child is waited for until it holds its
// memory. Its stdout is a pipe only for that: none of the agent's pipes
// reach it.
func startChild(child *exec.Cmd) error {
	if !slices.Contains(child.Env, helperAgentEnv+"=heavy-child") {
		return child.Start()
	}
	out, err := child.StdoutPipe()
	if err != nil {
		return err
	}
	if err := child.Start(); err != nil {
		return err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "holding\n" {
		return fmt.Errorf("the child said %q: %w", line, err)
	}
	return nil
}

// waitForever blocks until the process is killed.
func waitForever() {
	forever := make(chan os.Signal, 1)
	signal.Notify(forever, syscall.SIGUSR1) // keeps the runtime from calling this a deadlock
	<-forever
}

// echo calls echo on the agent and checks the answer.
func echo(t *testing.T, ctx context.Context, c *acprpc.Conn) {
	t.Helper()
	got, err := acprpc.CallFor[map[string]int](ctx, c, "echo", map[string]int{"n": 7})
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"n": 7}, got)
}

// exitCode is the status of an *exec.ExitError in err, or -1.
func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	return -1
}

// A well-behaved agent serves, and exits with status 0 when Close closes
// its stdin: Close returns nil, and Exited is closed.
func TestStartServesAndCloses(t *testing.T) {
	ctx := wiretest.Context(t)
	agent, err := agentproc.Start(ctx, helperAgent("serve"), nil, nil)
	require.NoError(t, err)
	echo(t, ctx, agent.Conn)
	require.NoError(t, agent.Close())
	require.NoError(t, agent.Close(), "a second Close returns the same")
	wiretest.Recv(t, ctx, agent.Exited())
	require.NoError(t, agent.Wait())
	<-agent.Done()
	assert.ErrorIs(t, agent.Call(ctx, "echo", nil, nil), acprpc.ErrConnClosed)
}

// Close shuts the connection down gracefully before closing the agent's
// stdin: a call still waiting is cancelled with $/cancel_request, and the
// agent's -32800 for it is read before the agent exits.
func TestStartCloseCancelsPendingCalls(t *testing.T) {
	ctx := wiretest.Context(t)
	sent := make(chan struct{}, 1)
	hooks := acprpc.Hooks{Sent: func(_ context.Context, m *acprpc.Message) {
		if m.Method == "block" && m.Kind == acprpc.KindRequest {
			sent <- struct{}{}
		}
	}}
	agent, err := agentproc.Start(ctx, helperAgent("serve"), nil, &agentproc.Options{Conn: &acprpc.Options{Hooks: hooks}})
	require.NoError(t, err)
	pending := make(chan error, 1)
	go func() { pending <- agent.Call(ctx, "block", nil, nil, acprpc.WaitAfterCancel(time.Minute)) }()
	wiretest.Recv(t, ctx, sent)
	require.NoError(t, agent.Close())
	err = wiretest.Recv(t, ctx, pending)
	assert.ErrorIs(t, err, acprpc.ErrShutdown)
	var rpcErr *acprpc.Error
	require.ErrorAs(t, err, &rpcErr, "the agent's answer to the cancel was read: %v", err)
	assert.Equal(t, int64(acprpc.CodeRequestCancelled), rpcErr.Code)
}

// The agent's stderr goes to a writer as it is, and to a logger one line at
// a time, a last line without its newline included.
func TestStartStderr(t *testing.T) {
	ctx := wiretest.Context(t)
	records := &wiretest.Recorder{}
	log := records.Logger()
	var raw interoptest.SyncBuffer
	agent, err := agentproc.Start(ctx, helperAgent("chatty"), nil, &agentproc.Options{Stderr: &raw, StderrLog: log})
	require.NoError(t, err)
	require.NoError(t, agent.Call(ctx, "stderr", []string{"from a request"}, nil))
	pid := agent.Pid()
	require.NoError(t, agent.Close())
	var lines []string
	for _, r := range records.Logged() {
		if r.Message == "agent stderr" {
			lines = append(lines, r.Attrs["line"])
			assert.Equal(t, fmt.Sprint(pid), r.Attrs["pid"])
			assert.Equal(t, slog.LevelInfo, r.Level)
		}
	}
	assert.Equal(t, []string{"line one", "line two", `["from a request"]`, "bye, with no newline"}, lines)
	assert.Equal(t, "line one\nline two\r\n[\"from a request\"]\nbye, with no newline", raw.String())
}

// The command's own Stderr is used when set; setting it in the options as
// well is refused, as is a command whose pipes are taken or that runs.
func TestStartRefusesWhatItCannotOwn(t *testing.T) {
	ctx := wiretest.Context(t)
	cmd := helperAgent("serve")
	cmd.Stderr = &interoptest.SyncBuffer{}
	_, err := agentproc.Start(ctx, cmd, nil, &agentproc.Options{Stderr: &interoptest.SyncBuffer{}})
	require.ErrorContains(t, err, "stderr")
	cmd = helperAgent("serve")
	cmd.Stdout = &interoptest.SyncBuffer{}
	_, err = agentproc.Start(ctx, cmd, nil, nil)
	require.ErrorContains(t, err, "Stdout")
	_, err = agentproc.Start(ctx, exec.Command("/nonexistent/agent"), nil, nil)
	require.ErrorContains(t, err, "starting the agent")

	var own interoptest.SyncBuffer
	cmd = helperAgent("exit-early")
	cmd.Stderr = &own
	agent, err := agentproc.Start(ctx, cmd, nil, nil)
	require.NoError(t, err)
	wiretest.Recv(t, ctx, agent.Exited()) // it exits by itself, after its line: a Close before that could stop it first
	_ = agent.Close()
	assert.Equal(t, "no API key\n", own.String())
	_, err = agentproc.Start(ctx, cmd, nil, nil)
	require.ErrorContains(t, err, "already started")
}

// An agent that exits at once closes the connection: a call fails with
// ErrConnClosed, and Wait and Close report its status.
func TestStartExitsEarly(t *testing.T) {
	ctx := wiretest.Context(t)
	records := &wiretest.Recorder{}
	log := records.Logger()
	agent, err := agentproc.Start(ctx, helperAgent("exit-early"), nil, &agentproc.Options{StderrLog: log})
	require.NoError(t, err)
	err = agent.Call(ctx, "echo", nil, nil)
	require.ErrorIs(t, err, acprpc.ErrConnClosed)
	wiretest.Recv(t, ctx, agent.Done())
	assert.Equal(t, 3, exitCode(agent.Wait()))
	assert.Equal(t, 3, exitCode(agent.Close()))
	r, ok := records.FindLogged(slog.LevelInfo, "agent stderr")
	require.True(t, ok)
	assert.Equal(t, "no API key", r.Attrs["line"])
}

// A call to an agent that exited before it read anything ends with the
// agent's exit and its status, although its write finds the pipe broken:
// the exit is known from the agent's reaping, not from the pipe that failed
// first. Each run is a new race between the write and the reaping.
func TestStartExitsBeforeItsFirstRequest(t *testing.T) {
	ctx := wiretest.Context(t)
	for range 8 {
		cmd := exec.Command("sh", "-c", "echo no API key >&2; exit 3")
		agent, tree := startWatched(t, cmd, &agentproc.Options{Stderr: &interoptest.SyncBuffer{}})
		wiretest.Recv(t, ctx, tree.gone)
		err := agent.Call(ctx, "initialize", nil, nil)
		require.ErrorIs(t, err, acprpc.ErrConnClosed)
		require.ErrorIs(t, err, agentproc.ErrExited)
		assert.Equal(t, 3, exitCode(err), "the call's error carries the exit status: %v", err)
		assert.Equal(t, 3, exitCode(agent.Close()))
	}
}

// An agent that exits neither when its stdin closes nor on SIGTERM is
// killed once ExitTimeout and then TermTimeout have passed, and Close says
// so.
func TestStartIgnoresEOF(t *testing.T) {
	ctx := wiretest.Context(t)
	agent, err := agentproc.Start(ctx, helperAgent("ignore-eof"), nil, &agentproc.Options{
		ExitTimeout: 50 * time.Millisecond,
		TermTimeout: 50 * time.Millisecond,
	})
	require.NoError(t, err)
	echo(t, ctx, agent.Conn)
	err = agent.Close()
	require.ErrorIs(t, err, agentproc.ErrKilled)
	var exit *exec.ExitError
	require.ErrorAs(t, agent.Wait(), &exit)
	status, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	assert.Equal(t, syscall.SIGKILL, status.Signal())
}

// Lines on the agent's stdout that are not messages are answered and
// logged, and the connection serves on.
func TestStartJunkOnStdout(t *testing.T) {
	ctx := wiretest.Context(t)
	records := &wiretest.Recorder{}
	log := records.Logger()
	agent, err := agentproc.Start(ctx, helperAgent("junk"), nil, &agentproc.Options{Conn: &acprpc.Options{Logger: log}})
	require.NoError(t, err)
	echo(t, ctx, agent.Conn)
	echo(t, ctx, agent.Conn)
	require.NoError(t, agent.Err())
	require.NoError(t, agent.Close())
	_, ok := records.FindLogged(slog.LevelWarn, "bad message")
	assert.True(t, ok, "the junk was logged: %v", records.Logged())
	notJSON, ok := records.FindLogged(slog.LevelWarn, "not JSON")
	require.True(t, ok, "the line that is not JSON was logged: %v", records.Logged())
	assert.Equal(t, "acprpc: the agent wrote a line that is not JSON to its stdout; it is dropped, and answered -32700. "+
		"An agent's stdout carries ACP messages only, and its logs go to stderr: "+
		"a print to stdout in the agent (fmt.Println, console.log, print) does this; move it to stderr, or report it to the agent's authors",
		notJSON.Message, "worded for the client from the first line, before any initialize")
	assert.Equal(t, "this is not JSON", notJSON.Attrs["line"])
}

// An agent that writes a lot to its stdout once its stdin has ended is
// drained, not blocked on a full pipe nor killed by a broken one: it exits
// with status 0 well before its exit timeout.
func TestStartWritesAfterEOF(t *testing.T) {
	ctx := wiretest.Context(t)
	agent, err := agentproc.Start(ctx, helperAgent("loud-exit"), nil, &agentproc.Options{ExitTimeout: time.Minute})
	require.NoError(t, err)
	echo(t, ctx, agent.Conn)
	require.NoError(t, agent.Close())
}

// Ending the context given to Start closes the connection, and so the
// agent's stdin: the agent exits on its own.
func TestStartContextEnds(t *testing.T) {
	ctx := wiretest.Context(t)
	connCtx, stop := context.WithCancel(ctx)
	agent, err := agentproc.Start(connCtx, helperAgent("serve"), nil, nil)
	require.NoError(t, err)
	echo(t, ctx, agent.Conn)
	stop()
	wiretest.Recv(t, ctx, agent.Exited())
	require.NoError(t, agent.Wait())
	require.NoError(t, agent.Close())
}

// writerFunc is an io.Writer that is a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// blockingSink blocks every write, and every record logged, until the test
// ends: a destination for the agent's stderr that has stopped taking it.
type blockingSink struct{ release chan struct{} }

func newBlockingSink(t *testing.T) blockingSink {
	s := blockingSink{release: make(chan struct{})}
	t.Cleanup(func() { close(s.release) })
	return s
}

func (s blockingSink) Write(b []byte) (int, error)               { <-s.release; return len(b), nil }
func (s blockingSink) Enabled(context.Context, slog.Level) bool  { return true }
func (s blockingSink) Handle(context.Context, slog.Record) error { <-s.release; return nil }
func (s blockingSink) WithAttrs([]slog.Attr) slog.Handler        { return s }
func (s blockingSink) WithGroup(string) slog.Handler             { return s }

// A Stderr or StderrLog that stops taking the agent's stderr cannot hold
// Close, Wait or Exited forever: once the agent has exited, its stderr is
// copied for a bounded time, and a write still stuck then is left to end
// when its destination takes it.
func TestStartCloseIsBoundedByAStderrThatBlocks(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func(blockingSink) *agentproc.Options
	}{
		{"Stderr", func(s blockingSink) *agentproc.Options { return &agentproc.Options{Stderr: s} }},
		{"StderrLog", func(s blockingSink) *agentproc.Options { return &agentproc.Options{StderrLog: slog.New(s)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := wiretest.Context(t)
			agent, err := agentproc.Start(ctx, helperAgent("chatty"), nil, tc.opts(newBlockingSink(t)))
			require.NoError(t, err)
			echo(t, ctx, agent.Conn)
			closed := make(chan error, 1)
			go func() { closed <- agent.Close() }()
			require.NoError(t, wiretest.Recv(t, ctx, closed))
			require.NoError(t, agent.Wait())
			wiretest.Recv(t, ctx, agent.Exited())
		})
	}
}

// The agent sends a request and exits while the client's handler for it
// runs (a permission dialog waiting for the user). Its exit ends its input
// and its reading alike: no answer can reach it, so the handler's context
// ends with the connection at once, not once Options.InputEndGrace (an
// hour here) has passed, as it would for a peer that only closed its
// output.
func TestStartAgentExitsWhileTheClientServesItsRequest(t *testing.T) {
	ctx := wiretest.Context(t)
	entered, cause := make(chan struct{}), make(chan error, 1)
	dialog := acprpc.HandlerFunc(func(hctx context.Context, req *acprpc.Request) (any, error) {
		close(entered)
		<-hctx.Done()
		cause <- context.Cause(hctx)
		return nil, hctx.Err()
	})
	agent, err := agentproc.Start(ctx, helperAgent("asks-then-exits"), dialog,
		&agentproc.Options{Conn: &acprpc.Options{InputEndGrace: time.Hour}})
	require.NoError(t, err)
	defer agent.Close()
	wiretest.Recv(t, ctx, entered)
	require.ErrorIs(t, wiretest.Recv(t, ctx, cause), acprpc.ErrConnClosed)
	wiretest.Recv(t, ctx, agent.Done())
	require.ErrorIs(t, agent.Err(), agentproc.ErrExited)
}
