package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// lineFinding is one way a line breaks a rule of its own.
type lineFinding struct {
	rule   Rule
	detail string
}

// judgeLine checks one line as it was on the wire: that it is one JSON-RPC
// 2.0 message in UTF-8 and, if it is an answer, that its envelope is whole.
// kind says what it is: "request", "notification", "answer" or "" for a
// line that is not a message.
func judgeLine(raw []byte) (kind string, found []lineFinding) {
	framing := func(format string, args ...any) (string, []lineFinding) {
		return "", []lineFinding{{ruleFraming, fmt.Sprintf(format, args...)}}
	}
	if !utf8.Valid(raw) {
		return framing("the line is not valid UTF-8, which every JSON-RPC message must be")
	}
	trimmed := bytes.TrimSpace(raw)
	if !json.Valid(trimmed) {
		return framing("the line is not JSON: output that is not a message, or a message cut by a raw newline inside it")
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(trimmed, &members) != nil {
		if trimmed[0] == '[' {
			return framing("the line is a JSON-RPC batch, which ACP does not use: one message per line")
		}
		return framing("the line is JSON but not an object: not a JSON-RPC message")
	}
	if string(members["jsonrpc"]) != `"2.0"` {
		return framing("the line has no \"jsonrpc\":\"2.0\": not a JSON-RPC 2.0 message")
	}
	_, hasMethod := members["method"]
	_, hasID := members["id"]
	_, hasResult := members["result"]
	_, hasError := members["error"]
	switch {
	case hasMethod && hasID:
		return "request", nil
	case hasMethod:
		return "notification", nil
	case hasID || hasResult || hasError:
		return "answer", judgeEnvelope(members)
	}
	return framing("the line is neither a request, a notification nor an answer")
}

// judgeEnvelope checks an answer's members.
func judgeEnvelope(members map[string]json.RawMessage) []lineFinding {
	var found []lineFinding
	bad := func(format string, args ...any) {
		found = append(found, lineFinding{ruleEnvelope, fmt.Sprintf(format, args...)})
	}
	_, hasID := members["id"]
	_, hasResult := members["result"]
	rawErr, hasError := members["error"]
	switch {
	case !hasID:
		bad("the answer has no id member: JSON-RPC requires one, null when the request's ID could not be read")
	case hasResult && hasError:
		bad("the answer has both result and error, where JSON-RPC allows exactly one")
	case !hasResult && !hasError:
		bad("the answer has neither result nor error")
	}
	if !hasError {
		return found
	}
	var e struct {
		Code    json.RawMessage `json:"code"`
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(rawErr, &e) != nil || rawErr[0] != '{' {
		bad("the answer's error is not an object")
		return found
	}
	if !isInteger(e.Code) {
		bad("the error's code %s is not an integer", orMissing(e.Code))
	}
	var message string
	if json.Unmarshal(e.Message, &message) != nil || e.Message[0] != '"' {
		bad("the error's message %s is not a string", orMissing(e.Message))
		return found
	}
	switch {
	case message == "":
		found = append(found, lineFinding{ruleErrorMessage, "the error's message is empty"})
	case strings.ContainsAny(message, "\r\n"):
		found = append(found, lineFinding{ruleErrorMessage, fmt.Sprintf("the error's message %q has a newline: it should be one short sentence, details in data", message)})
	}
	return found
}

// isInteger reports whether raw is a JSON number without a fraction or an
// exponent.
func isInteger(raw json.RawMessage) bool {
	var n json.Number
	if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		return false
	}
	_, err := n.Int64()
	return err == nil
}

func orMissing(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "(missing)"
	}
	return string(raw)
}

// looseID is an ID with its type forgotten: 7 and "7" are the same. An
// answer whose ID is not its request's but loosely is has not echoed it.
func looseID(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return fmt.Sprint(json.Number(raw))
	}
	return ""
}
