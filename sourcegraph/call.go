package sourcegraph

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/acpkit/acprpc"
)

// callIDs numbers Call's requests. They are strings, "acprpc-1" and up, so
// that they never meet the numbers the engine gives its own calls on the
// same connection.
var callIDs atomic.Uint64

// Call is conn.Call that cancels: when ctx ends before the answer, the peer
// is sent one $/cancel_request with the call's ID, and Call returns an
// error that matches both ctx.Err() and acprpc.ErrCancelled. The engine
// keeps the call in its table until the peer answers; a late answer is
// dropped there. opts are the engine's, except that the ID is Call's own.
func Call(ctx context.Context, conn *jsonrpc2.Conn, method string, params, result any, opts ...jsonrpc2.CallOption) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", acprpc.ErrCancelled, err)
	}
	id := jsonrpc2.ID{Str: "acprpc-" + strconv.FormatUint(callIDs.Add(1), 10), IsString: true}
	w, err := conn.DispatchCall(ctx, method, params, append(opts, jsonrpc2.PickID(id))...)
	if err != nil {
		return err
	}
	err = w.Wait(ctx, result)
	if ctxErr := ctx.Err(); ctxErr != nil && err == ctxErr {
		if nerr := conn.Notify(context.WithoutCancel(ctx), acprpc.MethodCancelRequest, cancelParams{RequestID: id}); nerr != nil {
			return fmt.Errorf("%w: %w (the cancel was not sent: %w)", acprpc.ErrCancelled, ctxErr, nerr)
		}
		return fmt.Errorf("%w: %w", acprpc.ErrCancelled, ctxErr)
	}
	return err
}

type cancelParams struct {
	RequestID jsonrpc2.ID `json:"requestId"`
}
