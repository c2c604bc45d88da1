package acprpc

import "context"

// VersionRouter serves ACP v1 and v2 on one connection type with a handler
// for each version, as the TypeScript SDK's agentProtocolRouter does: a Conn
// serving it negotiates initialize itself (the highest version it has a
// handler for at or below the client's, else -32022), and from then on
// every request and notification goes to the negotiated version's handler,
// initialize included. Before a version is known, messages go to V1.
type VersionRouter struct {
	V1 Handler
	V2 Handler
}

// Handle calls the handler of the connection's version.
func (v VersionRouter) Handle(ctx context.Context, req *Request) (any, error) {
	h := v.V1
	if c := ConnFromContext(ctx); c != nil && c.ProtocolVersion() >= ProtocolV2 || h == nil {
		h = v.V2
	}
	if h == nil {
		if req.IsNotification() {
			return nil, nil
		}
		return nil, MethodNotFound(req.Method)
	}
	return h.Handle(ctx, req)
}

// ProtocolVersions lists the versions that have a handler.
func (v VersionRouter) ProtocolVersions() []ProtocolVersion {
	var out []ProtocolVersion
	if v.V1 != nil {
		out = append(out, ProtocolV1)
	}
	if v.V2 != nil {
		out = append(out, ProtocolV2)
	}
	return out
}
