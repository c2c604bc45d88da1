package interoptest

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/acpkit/acprpc"
)

// WireLog records every message a Conn receives ("in") and sends ("out"),
// exactly as on the wire, in the order its Hooks see them: the shape of a
// golden wire file, for TypesRoundTrip. A request is always logged before
// its answer, since the answer comes after the request was sent or
// received. The zero WireLog is ready to use.
type WireLog struct {
	mu   sync.Mutex
	msgs []GoldenMessage
}

// Hooks returns next with the log's recording added after each hook.
func (l *WireLog) Hooks(next acprpc.Hooks) acprpc.Hooks {
	return acprpc.Hooks{
		Received: func(ctx context.Context, m *acprpc.Message) {
			if next.Received != nil {
				next.Received(ctx, m)
			}
			l.add("in", m)
		},
		Sent: func(ctx context.Context, m *acprpc.Message) {
			if next.Sent != nil {
				next.Sent(ctx, m)
			}
			l.add("out", m)
		},
	}
}

func (l *WireLog) add(dir string, m *acprpc.Message) {
	raw := append(json.RawMessage(nil), m.Raw...)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, GoldenMessage{Dir: dir, Msg: raw})
}

// Messages returns what the log holds so far.
func (l *WireLog) Messages() []GoldenMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]GoldenMessage(nil), l.msgs...)
}
