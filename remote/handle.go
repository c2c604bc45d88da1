package remote

import (
	"context"
	"net/http"

	"github.com/acpkit/acprpc"
)

// Handle returns an AcceptFunc that serves every connection with its own
// Conn, running h with opts (nil for the defaults). Each Conn's context has
// the values of its opening request's context (an authenticated user that
// middleware put there, say) but not its end: the Conn lives until its
// connection closes. Server.Shutdown shuts each Conn down gracefully
// (see OnShutdown).
func Handle(h acprpc.Handler, opts *acprpc.Options) AcceptFunc {
	return func(t acprpc.Transport, r *http.Request) {
		conn := acprpc.NewConn(context.WithoutCancel(r.Context()), t, h, opts)
		OnShutdown(t, conn.Shutdown)
	}
}
