//go:build unix

package agentproc_test

import (
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
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

// treeWatch sees the end of an agent's process tree: every process of it
// holds descriptor 3, the write end of a pipe, so the read end reaches EOF
// once the last of them has exited. No polling, and a zombie waiting for its
// parent holds no descriptor.
type treeWatch struct {
	w    *os.File
	gone chan struct{}
}

// watchTree passes the pipe to cmd as descriptor 3. Call started once cmd
// runs.
func watchTree(t *testing.T, cmd *exec.Cmd) *treeWatch {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.ExtraFiles = []*os.File{w}
	tw := &treeWatch{w: w, gone: make(chan struct{})}
	go func() {
		defer close(tw.gone)
		_, _ = io.Copy(io.Discard, r)
	}()
	t.Cleanup(func() {
		_ = w.Close()
		_ = r.Close()
		<-tw.gone
	})
	return tw
}

// started drops this process's copy of the write end.
func (tw *treeWatch) started() { _ = tw.w.Close() }

// startWatched starts cmd as an agent with opts, its tree watched.
func startWatched(t *testing.T, cmd *exec.Cmd, opts *agentproc.Options) (*agentproc.Process, *treeWatch) {
	t.Helper()
	tree := watchTree(t, cmd)
	agent, err := agentproc.Start(wiretest.Context(t), cmd, nil, opts)
	require.NoError(t, err)
	tree.started()
	return agent, tree
}

// childOf asks a lingers or orphans agent for its child's process ID, and
// makes sure the child ends with the test.
func childOf(t *testing.T, agent *agentproc.Process) int {
	t.Helper()
	pid, err := acprpc.CallFor[int](wiretest.Context(t), agent.Conn, "child", nil)
	require.NoError(t, err)
	require.Positive(t, pid)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// Real agents do not exit when their stdin closes, once they have a
// session. Close gives the agent ExitTimeout, then sends SIGTERM to its
// process group, and the agent's child, which ignores SIGTERM, is killed
// with the group as soon as the agent is gone: the whole tree has ended when
// Close returns, well before TermTimeout.
func TestStartCloseEscalatesToSIGTERM(t *testing.T) {
	ctx := wiretest.Context(t)
	cmd := helperAgent("lingers")
	agent, tree := startWatched(t, cmd, nil) // the defaults
	childOf(t, agent)
	start := time.Now()
	err := agent.Close()
	took := time.Since(start)
	require.ErrorIs(t, err, agentproc.ErrTerminated)
	assert.NotErrorIs(t, err, agentproc.ErrKilled)
	assert.GreaterOrEqual(t, took, agentproc.DefaultExitTimeout, "the agent had its grace after its stdin closed")
	assert.Equal(t, syscall.SIGTERM, exitSignal(t, agent.Wait()))
	wiretest.Recv(t, ctx, tree.gone)
}

// SIGTERM goes to the agent's whole group: an agent that, on SIGTERM, waits
// for its child to exit sees the child take the same SIGTERM, and exits
// before TermTimeout.
func TestStartSIGTERMReachesTheChildren(t *testing.T) {
	ctx := wiretest.Context(t)
	cmd := helperAgent("tends-child")
	agent, tree := startWatched(t, cmd, &agentproc.Options{ExitTimeout: time.Millisecond})
	childOf(t, agent)
	err := agent.Close()
	require.ErrorIs(t, err, agentproc.ErrTerminated)
	require.NotErrorIs(t, err, agentproc.ErrKilled, "the child never had the SIGTERM its parent waited for")
	require.NoError(t, agent.Wait(), "the agent caught SIGTERM, waited for its child and exited 0")
	wiretest.Recv(t, ctx, tree.gone)
}

// An agent that exits when its stdin closes, leaving a child behind, takes
// the child with it: its process group is killed once it has exited.
func TestStartChildrenEndWithTheAgent(t *testing.T) {
	ctx := wiretest.Context(t)
	cmd := helperAgent("orphans")
	agent, tree := startWatched(t, cmd, nil)
	childOf(t, agent)
	require.NoError(t, agent.Close())
	wiretest.Recv(t, ctx, tree.gone)
}

// A command whose SysProcAttr the caller set keeps it. When it puts the
// agent in a group of its own (Setpgid, or Setsid) Close signals that group,
// as it does by default; otherwise the agent shares this process's group,
// and only the agent itself is signalled: its children are the caller's
// to end.
func TestStartCallersSysProcAttr(t *testing.T) {
	for _, tc := range []struct {
		name     string
		attr     *syscall.SysProcAttr
		ownGroup bool
	}{
		{"Setpgid", &syscall.SysProcAttr{Setpgid: true}, true},
		{"Setsid", &syscall.SysProcAttr{Setsid: true}, true},
		{"shared group", &syscall.SysProcAttr{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := wiretest.Context(t)
			cmd := helperAgent("lingers")
			cmd.SysProcAttr = tc.attr
			agent, tree := startWatched(t, cmd, &agentproc.Options{ExitTimeout: time.Millisecond})
			child := childOf(t, agent)
			require.ErrorIs(t, agent.Close(), agentproc.ErrTerminated)
			if tc.ownGroup {
				wiretest.Recv(t, ctx, tree.gone)
				return
			}
			select {
			case <-tree.gone:
				t.Fatal("the child of an agent in the caller's process group was killed")
			default:
			}
			require.NoError(t, syscall.Kill(child, syscall.SIGKILL), "the child outlived the agent")
			wiretest.Recv(t, ctx, tree.gone)
		})
	}
}

// An agent that exits while a child of its own still holds its stdout and
// stderr ends the connection all the same: a pending call fails with
// ErrConnClosed and the agent's exit status, at once when the child went
// with the agent's process group, after a short drain when the agent shares
// the caller's group and the child lives on. The stderr log has the agent's
// last line by the time Wait returns.
func TestStartExitsWhileAChildHoldsItsStdout(t *testing.T) {
	for _, tc := range []struct {
		name string
		attr *syscall.SysProcAttr
	}{
		{"own group", nil},
		{"shared group", &syscall.SysProcAttr{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := wiretest.Context(t)
			// The sleep outlasts the test's every wait.
			cmd := exec.Command("sh", "-c", `read line; sleep 60 & echo $! >&2; exit 3`)
			cmd.SysProcAttr = tc.attr
			records := &wiretest.Recorder{}
			log := records.Logger()
			agent, err := agentproc.Start(ctx, cmd, nil, &agentproc.Options{StderrLog: log})
			require.NoError(t, err)
			err = agent.Call(ctx, "echo", nil, nil)
			require.ErrorIs(t, err, acprpc.ErrConnClosed)
			require.ErrorIs(t, err, agentproc.ErrExited)
			assert.Equal(t, 3, exitCode(err), "the call's error carries the exit status: %v", err)
			wiretest.Recv(t, ctx, agent.Done()) // the call fails as the input ends, the close comes right after
			require.ErrorIs(t, agent.Err(), agentproc.ErrExited)
			assert.Equal(t, 3, exitCode(agent.Wait()))
			r, ok := records.FindLogged(slog.LevelInfo, "agent stderr")
			require.True(t, ok, "the agent's last line was logged")
			sleeper, err := strconv.Atoi(r.Attrs["line"])
			require.NoError(t, err)
			t.Cleanup(func() { _ = syscall.Kill(sleeper, syscall.SIGKILL) })
			assert.Equal(t, 3, exitCode(agent.Close()))
		})
	}
}

// Exited is closed only once the agent's stderr has been written out: a
// writer still taking the agent's last line holds it, though the agent has
// exited (its tree is gone).
func TestStartExitedWaitsForStderr(t *testing.T) {
	ctx := wiretest.Context(t)
	cmd := helperAgent("exit-early")
	tree := watchTree(t, cmd)
	var agent *agentproc.Process
	started := make(chan struct{})
	exitedWhileWriting := make(chan bool, 1)
	var once sync.Once
	cmd.Stderr = writerFunc(func(b []byte) (int, error) {
		once.Do(func() {
			<-started
			<-tree.gone
			// Exited must not close while this write holds the copy; the
			// wait is how long the reaper is given to close it wrongly.
			wrong := time.NewTimer(300 * time.Millisecond)
			defer wrong.Stop()
			select {
			case <-agent.Exited():
				exitedWhileWriting <- true
			case <-wrong.C:
				exitedWhileWriting <- false
			}
		})
		return len(b), nil
	})
	agent, err := agentproc.Start(ctx, cmd, nil, nil)
	require.NoError(t, err)
	close(started)
	tree.started()
	assert.False(t, wiretest.Recv(t, ctx, exitedWhileWriting), "Exited closed before the agent's stderr was written out")
	assert.Equal(t, 3, exitCode(agent.Wait()))
	assert.Equal(t, 3, exitCode(agent.Close()))
}

// exitSignal is the signal that ended a process, from Wait's error.
func exitSignal(t *testing.T, err error) syscall.Signal {
	t.Helper()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	status, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, status.Signaled(), "the agent exited with status %d", status.ExitStatus())
	return status.Signal()
}

// An agent that exits while a child outside its group still holds its
// stderr, which is copied, ends a pending call with its exit status all the
// same: the exit is known from the agent's reaping, not from the end of its
// pipes, which the child keeps open.
func TestStartExitWhileAChildHoldsItsStderr(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func(*agentproc.Options)
	}{
		{"Stderr", func(o *agentproc.Options) { o.Stderr = &interoptest.SyncBuffer{} }},
		{"StderrLog", func(o *agentproc.Options) { o.StderrLog = (&wiretest.Recorder{}).Logger() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := wiretest.Context(t)
			// The sleep, in the caller's group, holds the agent's stderr
			// alone and outlasts the test's every wait; it answers its own
			// process ID on descriptor 3.
			cmd := exec.Command("sh", "-c", `read line; sleep 60 >/dev/null 3>&- & echo $! >&3; exit 3`)
			cmd.SysProcAttr = &syscall.SysProcAttr{}
			started := childPidOn3(t, cmd)
			var o agentproc.Options
			tc.opts(&o)
			agent, err := agentproc.Start(ctx, cmd, nil, &o)
			require.NoError(t, err)
			started()
			err = agent.Call(ctx, "echo", nil, nil)
			require.ErrorIs(t, err, acprpc.ErrConnClosed)
			require.ErrorIs(t, err, agentproc.ErrExited)
			assert.Equal(t, 3, exitCode(err), "the call's error carries the exit status: %v", err)
			assert.Equal(t, 3, exitCode(agent.Close()))
		})
	}
}

// childPidOn3 gives cmd a pipe as descriptor 3 on which its script writes a
// child's process ID, and kills that child when the test ends. Call
// started once cmd runs.
func childPidOn3(t *testing.T, cmd *exec.Cmd) (started func()) {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.ExtraFiles = []*os.File{w}
	read := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		read <- b
	}()
	t.Cleanup(func() {
		_ = w.Close()
		b := <-read
		_ = r.Close()
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return func() { _ = w.Close() }
}

// An agent that left its process group, leaving a child in it, is still
// signalled itself: Close does not wait forever for an agent that neither
// the group's SIGTERM nor its SIGKILL reached, and the child ends too.
func TestStartSignalsAnAgentThatLeftItsGroup(t *testing.T) {
	ctx := wiretest.Context(t)
	cmd := helperAgent("leaves-group")
	agent, tree := startWatched(t, cmd, &agentproc.Options{ExitTimeout: time.Millisecond, TermTimeout: time.Second})
	pid := agent.Pid()
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // this process's group is its own now
	childOf(t, agent)
	closed := make(chan error, 1)
	go func() { closed <- agent.Close() }()
	err := wiretest.Recv(t, ctx, closed)
	require.ErrorIs(t, err, agentproc.ErrTerminated, "the agent itself had the SIGTERM")
	assert.Equal(t, syscall.SIGTERM, exitSignal(t, agent.Wait()))
	wiretest.Recv(t, ctx, tree.gone)
}

// A call written to an agent that has exited, before the connection has
// read the end of its stdout (a child outside the agent's group holds it),
// finds the agent's stdin broken, and ends with the agent's exit and its
// status all the same, not with the broken pipe.
func TestStartWriteToAnExitedAgentEndsWithItsExit(t *testing.T) {
	ctx := wiretest.Context(t)
	cmd := exec.Command("sh", "-c", `sleep 60 </dev/null 3>&- & echo $! >&3; exit 3`)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	started := childPidOn3(t, cmd)
	agent, err := agentproc.Start(ctx, cmd, nil, nil)
	require.NoError(t, err)
	started()
	require.Equal(t, 3, exitCode(agent.Wait()))
	err = agent.Call(ctx, "initialize", nil, nil)
	require.ErrorIs(t, err, acprpc.ErrConnClosed)
	require.ErrorIs(t, err, agentproc.ErrExited)
	assert.Equal(t, 3, exitCode(err), "the call's error carries the exit status: %v", err)
	wiretest.Recv(t, ctx, agent.Done())
	// A call or notification made once the connection has closed says why.
	assert.ErrorIs(t, agent.Call(ctx, "echo", nil, nil), agentproc.ErrExited)
	assert.ErrorIs(t, agent.Notify(ctx, "note", nil), agentproc.ErrExited)
	assert.Equal(t, 3, exitCode(agent.Close()))
}
