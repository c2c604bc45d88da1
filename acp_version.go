package acprpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/acpkit/acprpc/internal/wire"
)

// protocol is everything a connection does differently by version; the rest
// of the library is the same for every version. A Conn holds the rules of
// the version negotiated on it, or of v1 until one is.
type protocol struct {
	version ProtocolVersion
	markers map[string]json.RawMessage

	// foreground: session/prompt is answered once the prompt is inserted,
	// and the turn runs on as the session's foreground work, which ends with
	// an idle state_update (acp_work.go).
	foreground bool
	// entityCancels: tool_call/cancel and terminal/cancel are the client's
	// requests to cancel one tool call or terminal (acp_entity.go).
	entityCancels bool
	// clientPreempts: CancelSession answers the session's requests in
	// flight here as cancelled at once, without waiting for the agent's
	// $/cancel_request.
	clientPreempts bool
}

// rulesFor returns the rules of version v. markers are the application's
// Options.CancelMarkers, or nil for the version's own.
func rulesFor(v ProtocolVersion, markers map[string]json.RawMessage) *protocol {
	if v >= ProtocolV2 {
		if markers == nil {
			markers = markersV2
		}
		return &protocol{version: v, markers: markers, foreground: true, entityCancels: true}
	}
	if markers == nil {
		markers = markersV1
	}
	return &protocol{version: v, markers: markers, clientPreempts: true}
}

// The markers of each version, built once and shared by every Conn that
// uses a version's own: they are only read, and a map per Conn cost every
// idle connection about 1 KiB.
var (
	markersV1 = ACPCancelMarkers(ProtocolV1)
	markersV2 = ACPCancelMarkers(ProtocolV2)
)

// versioning is the Conn's knowledge of its protocol version.
type versioning struct {
	current   atomic.Pointer[protocol]
	markers   map[string]json.RawMessage // the application's, or nil
	supported []ProtocolVersion          // when set, this side negotiates initialize
	// pinned: Options.PinnedVersion set the version, and no initialize
	// exchange changes it.
	pinned bool
	// initialized: this side had an initialize answered, or read the
	// peer's, so a session may be opened (acpRules.mayCall).
	initialized atomic.Bool
	// peerAgent: the peer is known to be an agent: this side has sent an
	// initialize, or agentproc started the peer (agentpeer.Mark).
	peerAgent atomic.Bool
	// declined: the agent answered this side's initialize with an older
	// version than it asked for, or nil.
	declined atomic.Pointer[declinedVersion]
}

// versionedHandler is a Handler that serves a fixed set of ACP versions, as
// VersionRouter does: a Conn serving one negotiates initialize itself (see
// Options.SupportedVersions). Any handler with the method is one, so that a
// handler wrapping a VersionRouter passes its versions on.
type versionedHandler interface {
	Handler
	ProtocolVersions() []ProtocolVersion
}

func (v *versioning) init(settled *Options, h Handler) {
	v.markers = settled.CancelMarkers
	v.supported = slices.Clone(settled.SupportedVersions)
	if vh, ok := h.(versionedHandler); ok && v.supported == nil {
		v.supported = vh.ProtocolVersions()
	}
	slices.Sort(v.supported)
	if v.pinned = settled.PinnedVersion != 0; v.pinned && v.supported != nil {
		// A pinned agent negotiates among its one version: a client asking
		// for a version below it gets -32022, any other gets it.
		v.supported = []ProtocolVersion{settled.PinnedVersion}
	}
	v.current.Store(rulesFor(settled.PinnedVersion, v.markers))
}

// ProtocolVersion returns the ACP version the connection speaks: the one
// its initialize exchange settled, the one set by Options.PinnedVersion
// or SetProtocolVersion, or 0 while none is known (the connection then
// follows v1's rules).
func (c *Conn) ProtocolVersion() ProtocolVersion { return c.protocol().version }

// SetProtocolVersion fixes the ACP version the connection speaks, for an
// application that negotiated it outside this Conn. The rules change for
// every message read or sent from then on. A later initialize exchange on
// the connection sets it again, unless Options.PinnedVersion pinned the
// version; this call changes even a pinned one.
func (c *Conn) SetProtocolVersion(v ProtocolVersion) {
	if c.protocol().version != v {
		c.acp.versions.current.Store(rulesFor(v, c.acp.versions.markers))
	}
}

// negotiate handles the peer's initialize on the read goroutine when this
// side negotiates: it picks the version before the handler runs, so the
// handler (and a VersionRouter) already serve that version, or answers the
// request itself when no version fits. It reports whether it answered.
func (c *Conn) negotiate(m *message) bool {
	supported := c.acp.versions.supported
	if len(supported) == 0 {
		return false
	}
	requested, ok := parseProtocolVersion(wire.Member(m.Params, "protocolVersion"))
	if !ok {
		c.refuse(m, &Error{Code: CodeInvalidParams,
			Message: "Invalid params: initialize.protocolVersion must be an integer from 0 to 65535"})
		return true
	}
	v, ok := selectVersion(requested, supported)
	if !ok {
		data, _ := json.Marshal(struct {
			Requested ProtocolVersion   `json:"requested"`
			Supported []ProtocolVersion `json:"supported"`
		}{requested, supported})
		c.refuse(m, &Error{Code: CodeUnsupportedProtocolVersion,
			Message: fmt.Sprintf("Unsupported protocol version %d (supported: %v)", requested, supported), Data: data})
		return true
	}
	if current := c.ProtocolVersion(); current != 0 && current != v {
		// One connection, one version: a repeated initialize must keep it.
		c.refuse(m, &Error{Code: CodeInvalidRequest,
			Message: fmt.Sprintf("Invalid request: the connection already speaks ACP version %d", current)})
		return true
	}
	c.SetProtocolVersion(v)
	return false
}

// selectVersion is ACP's negotiation: the highest supported version at or
// below the requested one. An agent that supports v1 alone keeps v1's
// rule, which answers every request with v1.
func selectVersion(requested ProtocolVersion, supported []ProtocolVersion) (ProtocolVersion, bool) {
	if len(supported) == 1 && supported[0] == ProtocolV1 {
		return ProtocolV1, true
	}
	for _, v := range slices.Backward(supported) {
		if v <= requested {
			return v, true
		}
	}
	return 0, false
}

// parseProtocolVersion reads a protocolVersion member: an integer from 0 to
// 65535.
func parseProtocolVersion(raw []byte) (ProtocolVersion, bool) {
	n, err := strconv.ParseUint(string(raw), 10, 16)
	return ProtocolVersion(n), err == nil
}

// learnVersion takes the version from a successful initialize result, the
// agent's answer either way through the connection, unless the version is
// pinned: an SDK that speaks v1 alone keeps v1's rules whatever the
// exchange says, and answering the mismatch is its business.
func (c *Conn) learnVersion(result []byte) {
	v, ok := parseProtocolVersion(wire.Member(result, "protocolVersion"))
	switch {
	case !ok:
	case c.acp.versions.pinned:
		if current := c.ProtocolVersion(); v != current {
			c.log.Warn("acprpc: initialize answered with another version than the pinned one; keeping the pinned one",
				"pinned", int(current), "answered", int(v))
		}
	default:
		c.SetProtocolVersion(v)
	}
}

// declinedVersion is an initialize answered with an older version than the
// one asked for: the agent does not speak the newer one, and the connection
// follows the older one's rules from then on.
type declinedVersion struct{ asked, answered ProtocolVersion }

// asking notes the version an initialize call f asks for.
func (v *versioning) asking(pc *pendingCall, f *frame) {
	if pc.method != methodInitialize {
		return
	}
	v.peerAgent.Store(true)
	pc.acp.asked, _ = parseProtocolVersion(wire.Member(wire.Member(f.Buf.Bytes(), "params"), "protocolVersion"))
}

// answered notes an initialize answer that names an older version than its
// call asked for.
func (v *versioning) answered(pc *pendingCall, result []byte) {
	got, ok := parseProtocolVersion(wire.Member(result, "protocolVersion"))
	if ok && got < pc.acp.asked {
		v.declined.Store(&declinedVersion{asked: pc.acp.asked, answered: got})
	}
}

// explain adds to err, a result that did not decode or an error answer,
// that the agent declined the version asked for, when it did: a client
// built on one version's types (acpv2) fails against an agent of an older
// one (a v1 agent) first on the initialize answer's members, then on the
// agent's refusal of params it does not know, and neither says why.
func (v *versioning) explain(err error) error {
	d := v.declined.Load()
	var rpcErr *Error
	if d == nil || errors.As(err, &rpcErr) && rpcErr.Code != CodeInvalidParams {
		return err
	}
	return statedError{fmt.Sprintf("%v; the agent answered initialize with protocolVersion %d, though this side asked for %d: "+
		"it does not speak ACP v%d, and this connection follows v%d's rules: send it v%d's messages (acpv%d's types and "+
		"methods; a handler that serves both versions is an acprpc.VersionRouter), or close the connection if this side speaks v%d alone",
		err, d.answered, d.asked, d.asked, d.answered, d.answered, d.answered, d.asked), []error{err}}
}

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
	h := v.handlerOn(connOf(ctx))
	if h == nil {
		if req.IsNotification() {
			return nil, nil
		}
		return nil, MethodNotFound(req.Method)
	}
	return h.Handle(ctx, req)
}

// handlerOn returns the handler of c's version (V1 before one is known),
// or the one there is.
func (v VersionRouter) handlerOn(c *Conn) Handler {
	if c != nil && c.ProtocolVersion() >= ProtocolV2 || v.V1 == nil {
		return v.V2
	}
	return v.V1
}

// serves reports whether the handler of c's version serves method.
func (v VersionRouter) serves(c *Conn, method string) bool {
	return handlerServes(v.handlerOn(c), c, method)
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
