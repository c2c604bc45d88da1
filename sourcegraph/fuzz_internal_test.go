package sourcegraph

import (
	"encoding/json"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

// FuzzIDsAsTheEngineReadsThem: for every request ID the engine accepts, a
// cancel naming the same JSON finds it (cancelTarget reads it as the engine
// does, -1 and escapes included), and the engine's answer to it is matched
// back to it (answerOf), which is what the Layer's table rests on.
func FuzzIDsAsTheEngineReadsThem(f *testing.F) {
	for _, seed := range []string{`1`, `0`, `-1`, `"x"`, `"\u0041"`, `18446744073709551615`, `9223372036854775808`,
		`1e0`, `1.0`, `null`, `true`, `{}`, `""`, `-9223372036854775808`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		var req jsonrpc2.Request
		if req.UnmarshalJSON([]byte(`{"jsonrpc":"2.0","id":`+token+`,"method":"m"}`)) != nil || req.Notif {
			return // the engine closes the connection, or takes it for a notification
		}
		params := json.RawMessage(`{"requestId":` + token + `}`)
		got, ok := cancelTarget(&params, "requestId")
		if !ok || got != req.ID {
			t.Fatalf("a cancel for %s reads %+v (%v); the engine's request is %+v", token, got, ok, req.ID)
		}
		null := json.RawMessage(`null`)
		b, err := json.Marshal(&jsonrpc2.Response{ID: req.ID, Result: &null})
		if err != nil {
			t.Fatal(err)
		}
		id, code, isAnswer := answerOf(b)
		if !isAnswer || code != nil || id != req.ID {
			t.Fatalf("the answer %s reads as %+v, %v, %v", b, id, code, isAnswer)
		}
	})
}
