package wiretest

import (
	"context"
	"encoding/json"

	"github.com/acpkit/acprpc"
)

// Mux routes requests and notifications by method; any other method gets
// -32601 (which, for a notification, is only logged).
type Mux map[string]acprpc.HandlerFunc

// Handle calls the method's function.
func (m Mux) Handle(ctx context.Context, req *acprpc.Request) (any, error) {
	if f, ok := m[req.Method]; ok {
		return f(ctx, req)
	}
	return nil, acprpc.MethodNotFound(req.Method)
}

// Echo answers with the request's params as they arrived.
func Echo(_ context.Context, req *acprpc.Request) (any, error) {
	if req.Params == nil {
		return json.RawMessage(`null`), nil
	}
	return req.Params, nil
}

// Ping answers "pong"; tests send it as a sync point: once its answer is
// read, every line sent before it has been read by the Conn.
func Ping(context.Context, *acprpc.Request) (any, error) { return "pong", nil }

// Hold returns a handler that holds its request open until release is
// closed, then answers "held"; if its context ends first, it returns the
// cause. Hold(nil) holds until its context ends. Track it with a Recorder
// to get its context.
func Hold(release <-chan struct{}) acprpc.HandlerFunc {
	return func(ctx context.Context, _ *acprpc.Request) (any, error) {
		select {
		case <-release:
			return "held", nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}
