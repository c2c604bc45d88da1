package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wireLog is a transport that keeps what is written to it, in order, and
// reads nothing until it is closed.
type wireLog struct {
	mu     sync.Mutex
	sent   []string
	want   int // full is closed once this many are written
	full   chan struct{}
	closed chan struct{}
	once   sync.Once
}

func (l *wireLog) Send(msg []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent = append(l.sent, string(msg))
	if len(l.sent) == l.want {
		close(l.full)
	}
	return nil
}

func (l *wireLog) Recv() ([]byte, error) {
	<-l.closed
	return nil, io.EOF
}

func (l *wireLog) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// The transcript holds the client's lines in the order they went on the
// wire, also when lines acpcheck injects race the Conn's own.
func TestTranscriptKeepsTheWiresOrder(t *testing.T) {
	const n = 300
	wire := &wireLog{want: 2 * n, full: make(chan struct{}), closed: make(chan struct{})}
	w := newTranscript()
	tp := &tap{s: wire, w: w}
	conn := acprpc.NewConn(context.Background(), tp, nil, &acprpc.Options{Hooks: w.hooks()})
	defer conn.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			require.NoError(t, conn.Notify(context.Background(), "_x/conn", map[string]int{"n": i}))
		}
	})
	wg.Go(func() {
		for i := range n {
			_, err := tp.inject(fmt.Sprintf(`{"jsonrpc":"2.0","method":"_x/injected","params":{"n":%d}}`, i))
			require.NoError(t, err)
		}
	})
	wg.Wait()
	select { // the Conn writes its notifications on a goroutine of its own
	case <-wire.full:
	case <-time.After(time.Minute):
		t.Fatal("the Conn did not write its notifications within a minute")
	}
	var recorded []string
	for _, l := range w.all() {
		recorded = append(recorded, l.Raw)
	}
	wire.mu.Lock()
	defer wire.mu.Unlock()
	assert.Equal(t, wire.sent, recorded)
}
