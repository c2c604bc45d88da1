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
	return execute(callsTemplate, map[string]any{"Pkg": pkg, "Version": m.version, "Sides": sides, "UnstableNote": unstableNote})
}

// execute is what t writes from data.
func execute(t *template.Template, data any) (string, error) {
	var b bytes.Buffer
	err := t.Execute(&b, data)
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
// Version is the protocol version of this package's types, for
// initialize's protocolVersion: what Agent's default answers, and what a
// client asks for.
const Version ProtocolVersion = {{.Version}}

// Agent is an agent's handlers: one optional function a method the client
// sends the agent, each called with its params decoded and its request's
// context, as acprpc.RequestHandler and acprpc.NotificationHandler do. A
// nil function leaves its method unregistered (a request for it is
// answered -32601), except Initialize and SessionNew, which have defaults
// so that the smallest agent writes only SessionPrompt: initialize is
// answered with Version{{if eq .Version 1}} (and Info as agentInfo, when it has a
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
	res := InitializeResponse{ProtocolVersion: Version}
	if a.Info.Name != "" {
		res.AgentInfo = &a.Info
	}
	return res, nil
{{- else}}
	return InitializeResponse{ProtocolVersion: Version, Info: a.Info}, nil
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

// Router is a new acprpc.Router serving c, for agentproc.Start,
// agentproc.Run or remote.Dial.
func (c Client) Router() *acprpc.Router {
	r := acprpc.NewRouter()
	c.Register(r)
	return r
}
`))

// callsTestFile is calls_test.go's source after its header: tests that
// every typed method is the method of its name, with its types, and that
// Agent and Client register every function they hold.
func callsTestFile(_ *model, pkg string) (string, error) {
	return execute(callsTestTemplate, map[string]any{"Pkg": pkg})
}

var callsTestTemplate = template.Must(template.New("calls_test").Parse(`package {{.Pkg}}

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

// TestTypedMethodsMatchTheRegistry checks each value of ToAgent and
// ToClient against the method table: its name is a method's, and its
// params and result are that method's types.
func TestTypedMethodsMatchTheRegistry(t *testing.T) {
	for _, methods := range []any{ToAgent, ToClient} {
		v := reflect.ValueOf(methods)
		for i := range v.NumField() {
			field, value := v.Type().Field(i).Name, v.Field(i)
			name := value.FieldByName("Name").String()
			mt, ok := methodTypes[name]
			require.True(t, ok, "%s.%s is %q, which is no method", v.Type().Name(), field, name)
			assert.Equal(t, "Method"+field, constName(t, name), "%s's field", name)
			if call, ok := value.Type().MethodByName("Call"); ok {
				require.NotNil(t, mt.Request, "%s is no request", name)
				assert.Equal(t, reflect.TypeOf(mt.Request()).Elem(), call.Type.In(3), "%s's params", name)
				assert.Equal(t, reflect.TypeOf(mt.Result()).Elem(), call.Type.Out(0), "%s's result", name)
				continue
			}
			notify, _ := value.Type().MethodByName("Notify")
			require.NotNil(t, mt.Notification, "%s is no notification", name)
			assert.Equal(t, reflect.TypeOf(mt.Notification()).Elem(), notify.Type.In(3), "%s's params", name)
		}
	}
}

// constName is the name of the Method constant whose value is name, found
// through the typed methods' own table.
func constName(t *testing.T, name string) string {
	t.Helper()
	for _, methods := range []any{ToAgent, ToClient} {
		v := reflect.ValueOf(methods)
		for i := range v.NumField() {
			if v.Field(i).FieldByName("Name").String() == name {
				return "Method" + v.Type().Field(i).Name
			}
		}
	}
	return ""
}

// errReached is what every function of a filled handler set returns.
var errReached = errors.New("reached")

// fillHandlers sets every function field of the handler set at set (a
// pointer to an Agent or a Client) to one that sends its field's name to
// reached.
func fillHandlers(set any, reached chan<- string) {
	v := reflect.ValueOf(set).Elem()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		if f.Kind() != reflect.Func {
			continue
		}
		f.Set(reflect.MakeFunc(f.Type(), func([]reflect.Value) []reflect.Value {
			reached <- name
			if f.Type().NumOut() == 0 {
				return nil
			}
			return []reflect.Value{reflect.Zero(f.Type().Out(0)), reflect.ValueOf(&errReached).Elem()}
		}))
	}
}

// requireEveryMethodServed sends r each method of methods, a request or a
// notification without params (the zero params, whatever their type
// requires), and checks that it reaches the function of
// the same name.
func requireEveryMethodServed(t *testing.T, r *acprpc.Router, methods any, reached <-chan string) {
	v := reflect.ValueOf(methods)
	for i := range v.NumField() {
		field, value := v.Type().Field(i).Name, v.Field(i)
		req := &acprpc.Request{Method: value.FieldByName("Name").String()}
		_, isRequest := value.Type().MethodByName("Call")
		if isRequest {
			req.ID = acprpc.Int64ID(int64(i + 1))
		}
		_, err := r.Handle(context.Background(), req)
		var rpcErr *acprpc.Error
		if errors.As(err, &rpcErr) && rpcErr.Code == acprpc.CodeInvalidParams {
			// Params that hold a variant cannot come empty: the typed
			// handler refusing them is the registration.
			continue
		}
		if isRequest {
			assert.ErrorIs(t, err, errReached, "%s", req.Method)
		}
		select {
		case got := <-reached:
			assert.Equal(t, field, got, "%s", req.Method)
		default:
			t.Errorf("%s reached no function", req.Method)
		}
	}
}

// Agent registers every function it holds for the method of its name.
func TestAgentServesEveryMethod(t *testing.T) {
	reached := make(chan string, 1)
	var a Agent
	fillHandlers(&a, reached)
	requireEveryMethodServed(t, a.Router(), ToAgent, reached)
}

// Client registers every function it holds for the method of its name.
func TestClientServesEveryMethod(t *testing.T) {
	reached := make(chan string, 1)
	var c Client
	fillHandlers(&c, reached)
	requireEveryMethodServed(t, c.Router(), ToClient, reached)
}

// An empty Client registers nothing, and an empty Agent only the defaults
// of initialize and session/new.
func TestEmptyHandlerSets(t *testing.T) {
	ctx := context.Background()
	for _, r := range []*acprpc.Router{Agent{}.Router(), Client{}.Router()} {
		_, err := r.Handle(ctx, &acprpc.Request{ID: acprpc.Int64ID(1), Method: MethodSessionPrompt, Params: json.RawMessage("{}")})
		var rpcErr *acprpc.Error
		require.ErrorAs(t, err, &rpcErr)
		assert.EqualValues(t, acprpc.CodeMethodNotFound, rpcErr.Code)
	}
	// The params every member the schema requires, as the zero values write them.
	for method, params := range map[string]any{MethodInitialize: InitializeRequest{}, MethodSessionNew: NewSessionRequest{}} {
		raw, err := json.Marshal(params)
		require.NoError(t, err)
		_, err = Agent{}.Router().Handle(ctx, &acprpc.Request{ID: acprpc.Int64ID(1), Method: method, Params: raw})
		assert.NoError(t, err, "%s", method)
	}
}
`))
