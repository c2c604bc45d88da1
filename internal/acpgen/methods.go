package main

import (
	"fmt"
	"strings"
)

// method is one of the protocol's methods, with the types of its params
// and result.
type method struct {
	Wire         string // "session/prompt"
	Const        string // MethodSessionPrompt
	Request      string // the params of the request, or ""
	Response     string // its result
	Notification string // the params of the notification of the same name, or ""
	RequestSide  string // x-side: who serves the request
	NoticeSide   string // x-side: who receives the notification
	Unstable     bool
}

// collectMethods lists the methods the definitions name with x-method,
// in the schema's order.
func (m *model) collectMethods() {
	byWire := map[string]*method{}
	for _, name := range m.defs.Names {
		s, d := m.defs.Get(name), m.bySchema[name]
		if s.XMethod == "" || d == nil {
			continue
		}
		mt := byWire[s.XMethod]
		if mt == nil {
			mt = &method{Wire: s.XMethod, Const: "Method" + goName(s.XMethod), Unstable: true}
			byWire[s.XMethod] = mt
			m.methods = append(m.methods, mt)
		}
		if !d.Unstable {
			mt.Unstable = false
		}
		switch {
		case strings.HasSuffix(name, "Request"):
			mt.Request, mt.RequestSide = d.Name, s.XSide
		case strings.HasSuffix(name, "Response"):
			mt.Response = d.Name
		case strings.HasSuffix(name, "Notification"):
			mt.Notification, mt.NoticeSide = d.Name, s.XSide
		}
	}
}

// sides says who sends a message that the side named by x-side serves.
var sides = map[string]string{
	"agent":    "the client sends the agent",
	"client":   "the agent sends the client",
	"protocol": "either side sends the other",
	"proxy":    "a proxy and its conductor exchange",
}

// doc is the method constant's doc comment.
func (mt *method) doc() string {
	var parts []string
	if mt.Request != "" {
		parts = append(parts, fmt.Sprintf("a request %s, with params %s and result %s", sides[mt.RequestSide], mt.Request, mt.Response))
	}
	if mt.Notification != "" {
		parts = append(parts, fmt.Sprintf("a notification %s, with params %s", sides[mt.NoticeSide], mt.Notification))
	}
	s := fmt.Sprintf("%s is %q: %s.", mt.Const, mt.Wire, strings.Join(parts, "; and "))
	if mt.Unstable {
		s += "\n\n" + unstableNote
	}
	return s
}
