package main

import (
	"bytes"
	"fmt"
	"text/template"
)

// This file writes calls.go: each method of the protocol as a typed value
// (an acprpc.Method or acprpc.Notification) in ToAgent and ToClient, and the
// handler sets Agent and Client, a struct of optional functions that
// registers itself on an acprpc.Router. The types are those the methods
// table (methods.go) names; nothing here reads the definitions.

// callSide is the methods one side serves: ToAgent, AgentMethods and Agent.
type callSide struct {
	Var, Type, Handlers string // ToAgent, AgentMethods, Agent
	Side                string // the x-side that serves them: "agent"
	Sender, Receiver    string // "the client", "the agent"
	Entries             []callEntry
}

// callEntry is one method of a side: a request or a notification.
type callEntry struct {
	Field, Const, Wire string
	Params, Result     string // Result is "" for a notification
	Unstable           bool
}

// Value is the entry's type in the methods struct.
func (e callEntry) Value() string {
	if e.Result == "" {
		return fmt.Sprintf("acprpc.Notification[%s]", e.Params)
	}
	return fmt.Sprintf("acprpc.Method[%s, %s]", e.Params, e.Result)
}

// Func is the entry's type in the handler set.
func (e callEntry) Func() string {
	if e.Result == "" {
		return fmt.Sprintf("func(ctx context.Context, params %s)", e.Params)
	}
	return fmt.Sprintf("func(ctx context.Context, params %s) (%s, error)", e.Params, e.Result)
}

// callSides sorts the model's methods by the side that serves them.
// $/cancel_request (which the connection consumes) and the proxy methods
// (between a proxy and its conductor) have no side of their own.
func callSides(m *model) ([]*callSide, error) {
	sides := []*callSide{
		{Var: "ToAgent", Type: "AgentMethods", Handlers: "Agent", Side: "agent", Sender: "the client", Receiver: "the agent"},
		{Var: "ToClient", Type: "ClientMethods", Handlers: "Client", Side: "client", Sender: "the agent", Receiver: "the client"},
	}
	for _, s := range sides {
		fields := map[string]bool{}
		add := func(e callEntry) error {
			if fields[e.Field] {
				return fmt.Errorf("%s: two methods named %s", s.Type, e.Field)
			}
			fields[e.Field] = true
			s.Entries = append(s.Entries, e)
			return nil
		}
		for _, mt := range m.methods {
			field := mt.Const[len("Method"):]
			if mt.Request != "" && mt.RequestSide == s.Side {
				if mt.Response == "" {
					return nil, fmt.Errorf("%s: a request without a response type", mt.Wire)
				}
				if err := add(callEntry{field, mt.Const, mt.Wire, mt.Request, mt.Response, mt.Unstable}); err != nil {
					return nil, err
				}
			}
			if mt.Notification != "" && mt.NoticeSide == s.Side {
				if err := add(callEntry{field, mt.Const, mt.Wire, mt.Notification, "", mt.Unstable}); err != nil {
					return nil, err
				}
			}
		}
	}
	return sides, nil
}

// callsFile is calls.go's source after its header: package clause,
// imports and declarations.
func callsFile(m *model, pkg string) (string, error) {
	sides, err := callSides(m)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	err = callsTemplate.Execute(&b, map[string]any{
		"Pkg": pkg, "Version": m.version, "Sides": sides, "UnstableNote": unstableNote,
	})
	return b.String(), err
}

var callsTemplate = template.Must(template.New("calls").Parse(`package {{.Pkg}}

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/acpkit/acprpc"
)
{{range .Sides}}
// {{.Var}} is every method {{.Sender}} sends {{.Receiver}}, each a value
// that knows its name and its types, so a call needs neither:
// {{.Var}}.X.Call(ctx, conn, params) for a request returns its typed result,
// {{.Var}}.X.Notify(ctx, conn, params) sends a notification, and
// {{.Var}}.X.Handle(router, f) serves one. {{.Handlers}} registers them all at
// once.
var {{.Var}} = {{.Type}}{
{{- range .Entries}}
	{{.Field}}: {{.Value}}{Name: {{.Const}}},
{{- end}}
}

// {{.Type}} is the type of {{.Var}}: one field a method {{.Receiver}} serves.
type {{.Type}} struct {
{{- range .Entries}}
	// {{.Field}} is {{printf "%q" .Wire}}{{if .Result}}: params {{.Params}}, result {{.Result}}{{else}}, a notification: params {{.Params}}{{end}}.
{{- if .Unstable}}
	//
	// {{$.UnstableNote}}
{{- end}}
	{{.Field}} {{.Value}}
{{- end}}
}
{{end}}
// Agent is an agent's handlers: one optional function a method the client
// sends the agent, each called with its params decoded and its request's
// context, as acprpc.RequestHandler and acprpc.NotificationHandler do. A
// nil function leaves its method unregistered (a request for it is
// answered -32601), except Initialize and SessionNew, which have defaults
// so that the smallest agent writes only SessionPrompt: initialize is
// answered with protocol version {{.Version}}{{if eq .Version 1}} (and Info as agentInfo, when it has a
// name){{else}} and Info{{end}}, and session/new with a new session ID, sess_1, sess_2 and so on,
// counted by each Register.
type Agent struct {
	// Info is the agent's name and version in the default answer to
	// initialize.
	Info Implementation
{{- with index .Sides 0}}{{range .Entries}}
	// {{.Field}} serves {{printf "%q" .Wire}}.
{{- if .Unstable}}
	//
	// {{$.UnstableNote}}
{{- end}}
	{{.Field}} {{.Func}}
{{- end}}{{end}}
}

// Register serves a's methods on r, each non-nil function its method's, and
// Initialize and SessionNew their defaults when nil; each replaces what r
// had for its method.
func (a Agent) Register(r *acprpc.Router) {
	if a.Initialize == nil {
		a.Initialize = a.initialize
	}
	if a.SessionNew == nil {
		a.SessionNew = newSessionIDs()
	}
{{- with index .Sides 0}}{{range .Entries}}
	if a.{{.Field}} != nil {
		ToAgent.{{.Field}}.Handle(r, a.{{.Field}})
	}
{{- end}}{{end}}
}

// Router is a new acprpc.Router serving a, for acprpc.NewConn,
// acprpc.ServeStdio or a remote server.
func (a Agent) Router() *acprpc.Router {
	r := acprpc.NewRouter()
	a.Register(r)
	return r
}

// initialize is the default answer to initialize.
func (a Agent) initialize(context.Context, InitializeRequest) (InitializeResponse, error) {
{{- if eq .Version 1}}
	res := InitializeResponse{ProtocolVersion: 1}
	if a.Info.Name != "" {
		res.AgentInfo = &a.Info
	}
	return res, nil
{{- else}}
	return InitializeResponse{ProtocolVersion: {{.Version}}, Info: a.Info}, nil
{{- end}}
}

// newSessionIDs is the default session/new: each call a new session ID.
func newSessionIDs() func(context.Context, NewSessionRequest) (NewSessionResponse, error) {
	var n atomic.Uint64
	return func(context.Context, NewSessionRequest) (NewSessionResponse, error) {
		return NewSessionResponse{SessionID: SessionID("sess_" + strconv.FormatUint(n.Add(1), 10))}, nil
	}
}

// Client is a client's handlers: one optional function a method the agent
// sends the client, each called with its params decoded and its request's
// context, as acprpc.RequestHandler and acprpc.NotificationHandler do. A
// nil function leaves its method unregistered: a request for it is answered
// -32601, and a notification of it is dropped.
type Client struct {
{{- with index .Sides 1}}{{range .Entries}}
	// {{.Field}} serves {{printf "%q" .Wire}}.
{{- if .Unstable}}
	//
	// {{$.UnstableNote}}
{{- end}}
	{{.Field}} {{.Func}}
{{- end}}{{end}}
}

// Register serves c's methods on r, each non-nil function its method's;
// each replaces what r had for its method.
func (c Client) Register(r *acprpc.Router) {
{{- with index .Sides 1}}{{range .Entries}}
	if c.{{.Field}} != nil {
		ToClient.{{.Field}}.Handle(r, c.{{.Field}})
	}
{{- end}}{{end}}
}

// Router is a new acprpc.Router serving c, for acprpc.StartAgent,
// acprpc.WithAgent or remote.Dial.
func (c Client) Router() *acprpc.Router {
	r := acprpc.NewRouter()
	c.Register(r)
	return r
}
`))
