package scaling

import (
	"net"
	"net/url"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/examples/internal/demo"
	"github.com/acpkit/acprpc/internal/interoptest"
)

// publicName is the name the balancer is published under. The replicas are
// told it with -allow-host, as a deployment tells them: without it they
// refuse every request that comes through the balancer (403).
const publicName = "acp.example.test"

// replica is one examples/agent -listen process.
type replica struct {
	name string // as haproxy.cfg names it
	url  string // http://127.0.0.1:port/acp
	proc *demo.AgentProcess
	log  *interoptest.SyncBuffer // its stderr
	done chan struct{}
	err  error // its exit, once done is closed
}

func startReplica(t *testing.T, name string) *replica {
	t.Helper()
	r := &replica{name: name, log: &interoptest.SyncBuffer{}, done: make(chan struct{})}
	proc, u, err := demo.StartListeningAgent(agentBin, r.log, "-allow-host", publicName)
	require.NoError(t, err)
	r.proc, r.url = proc, u
	go func() {
		r.err = proc.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		proc.Kill() // if the test left it running
		<-r.done
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, r.log.String())
		}
	})
	return r
}

// hostPort is the replica's address, as haproxy.cfg takes it.
func (r *replica) hostPort() string {
	u, _ := url.Parse(r.url)
	return u.Host
}

// balancer is HAProxy running haproxy.cfg in front of the replicas.
type balancer struct {
	url  string // http://127.0.0.1:port/acp
	log  *interoptest.SyncBuffer
	done chan struct{}
}

// startBalancer runs HAProxy on a listening socket this process opened and
// hands down (bind fd@3), so it is ready for clients before HAProxy has
// even started: they wait in the socket's backlog.
func startBalancer(t *testing.T, replicas ...*replica) *balancer {
	t.Helper()
	bin := interoptest.RequireHAProxy(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f, err := l.(*net.TCPListener).File()
	require.NoError(t, err)
	b := &balancer{url: "http://" + l.Addr().String() + "/acp", log: &interoptest.SyncBuffer{}, done: make(chan struct{})}
	require.NoError(t, l.Close()) // f holds the socket open

	cmd := exec.Command(bin, "-db", "-f", "haproxy.cfg")
	cmd.ExtraFiles = []*os.File{f}
	cmd.Env = append(os.Environ(), "ACP_FRONTEND=fd@3")
	for i, r := range replicas {
		cmd.Env = append(cmd.Env, "ACP_REPLICA_"+string(rune('1'+i))+"="+r.hostPort())
	}
	cmd.Stdout, cmd.Stderr = b.log, b.log
	require.NoError(t, cmd.Start())
	require.NoError(t, f.Close())
	go func() {
		_ = cmd.Wait()
		close(b.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-b.done
		if t.Failed() {
			t.Logf("HAProxy's log:\n%s", b.log.String())
		}
	})
	return b
}
