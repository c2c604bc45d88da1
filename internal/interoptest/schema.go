package interoptest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/internal/acpschema"
)

// SchemaValidator checks JSON values with the TypeScript SDK's own
// validators, one Node.js process (interop/src/validate-types.ts) for a
// test and all its checks.
type SchemaValidator struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

// NewSchemaValidator starts the validator, from the interop directory, and
// stops it when the test ends.
func NewSchemaValidator(t testing.TB, interopDir string) *SchemaValidator {
	t.Helper()
	node := RequireNode(t, interopDir)
	cmd := exec.Command(node, "--import", "tsx", filepath.Join("src", "validate-types.ts"))
	cmd.Dir = interopDir
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = in.Close()
		_ = cmd.Wait()
	})
	scanner := bufio.NewScanner(out)
	scanner.Buffer(nil, 64<<20)
	return &SchemaValidator{in: in, out: scanner}
}

// Check validates value as the definition def of ACP version (against the
// unstable schema's validators when unstable is set) and returns what the
// SDK makes of it: defaults filled in, members it does not know dropped.
func (v *SchemaValidator) Check(version int, unstable bool, def string, value json.RawMessage) (json.RawMessage, error) {
	req, err := json.Marshal(map[string]any{"version": version, "unstable": unstable, "def": def, "value": value})
	if err != nil {
		return nil, err
	}
	if _, err := v.in.Write(append(req, '\n')); err != nil {
		return nil, err
	}
	if !v.out.Scan() {
		return nil, fmt.Errorf("the validator stopped: %v", v.out.Err())
	}
	var answer struct {
		OK     bool            `json:"ok"`
		Error  string          `json:"error"`
		Parsed json.RawMessage `json:"parsed"`
	}
	if err := json.Unmarshal(v.out.Bytes(), &answer); err != nil {
		return nil, err
	}
	if !answer.OK {
		return nil, errors.New(answer.Error)
	}
	return answer.Parsed, nil
}

// SchemaRoundTrip checks every definition of ACP version's schema, stable
// and unstable, against its Go type in types (the generated package's
// registry): each sample of the definition (acpschema.Samples) is valid to
// the SDK, decodes into the Go type, encodes to JSON that the SDK accepts
// and reads as it read the sample, and then decodes and encodes to the
// same Go value and the same bytes.
func SchemaRoundTrip(t *testing.T, version int, interopDir string, types map[string]func() any) {
	v := NewSchemaValidator(t, interopDir)
	dir := filepath.Join(interopDir, "node_modules", "@agentclientprotocol", "sdk", "schema", fmt.Sprintf("v%d", version))
	checked := map[string]bool{}
	for _, unstable := range []bool{false, true} {
		name := map[bool]string{false: "schema.json", true: "schema.unstable.json"}[unstable]
		file, err := acpschema.Load(filepath.Join(dir, name))
		require.NoError(t, err)
		for _, def := range file.Defs.Names {
			if file.Defs.Get(def).XDocsIgnore {
				continue
			}
			newValue := types[def]
			require.NotNil(t, newValue, "%s: the generated package has no type for %s", name, def)
			checked[def] = true
			t.Run(name+"/"+def, func(t *testing.T) {
				samples, err := file.Samples(def)
				require.NoError(t, err)
				for _, sample := range samples {
					roundTrip(t, v, version, unstable, def, sample, newValue)
				}
			})
		}
	}
	for def := range types {
		assert.True(t, checked[def], "%s is in the registry but not in the schema", def)
	}
}

// roundTrip checks one sample of def.
func roundTrip(t *testing.T, v *SchemaValidator, version int, unstable bool, def string, sample json.RawMessage, newValue func() any) {
	t.Helper()
	want, err := v.Check(version, unstable, def, sample)
	require.NoError(t, err, "the sample itself is invalid: %s", sample)
	first := newValue()
	require.NoError(t, json.Unmarshal(sample, first), "decoding %s", sample)
	encoded, err := json.Marshal(first)
	require.NoError(t, err, "encoding the decoded %s", sample)
	got, err := v.Check(version, unstable, def, encoded)
	require.NoError(t, err, "the SDK refuses the encoding of %s: %s", sample, encoded)
	assert.Equal(t, withoutNulls(t, want), withoutNulls(t, got), "the SDK reads %s, sent as %s, differently", sample, encoded)
	// Encoding settles a value: a nil required list is sent as [], so the
	// value read back holds [] where the first held nil, and from there on
	// decoding and encoding give the same value and the same bytes.
	second := newValue()
	require.NoError(t, json.Unmarshal(encoded, second), "decoding our own %s", encoded)
	again, err := json.Marshal(second)
	require.NoError(t, err)
	assert.Equal(t, string(encoded), string(again), "encoding is not stable")
	third := newValue()
	require.NoError(t, json.Unmarshal(again, third))
	assert.Equal(t, second, third, "%s does not decode to what it was encoded from", again)
}

// withoutNulls decodes a JSON value with its null members left out: the
// schema makes an omitted optional member and a null one the same, and an
// absent member is how the Go types send both.
func withoutNulls(t *testing.T, data json.RawMessage) any {
	var v any
	require.NoError(t, json.Unmarshal(data, &v))
	return dropNulls(v)
}

func dropNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
			} else {
				x[k] = dropNulls(e)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = dropNulls(e)
		}
	}
	return v
}

// GoldenMessage is one line of a golden wire file: a JSON-RPC message as
// it went by, and the side it went to ("in": to the Go side, "out": from
// it; answers are matched to their requests by direction and ID).
type GoldenMessage struct {
	Dir string          `json:"dir"`
	Msg json.RawMessage `json:"msg"`
}

// GoldenTypes makes the Go value a method's message decodes into: its
// request's params ("params"), its notification's params
// ("notification"), its result ("result") or the error object of an error
// answer ("error"; method is "" when the answer matches no request); nil
// for none.
type GoldenTypes func(method, member string) any

// GoldenRoundTrip decodes the params and result of every message of the
// golden wire files into the Go types, encodes them again, and checks that
// the SDK's validators accept the encoding and read it as they read what
// was on the wire (defaults filled in, an omitted member and a null one
// the same). It returns how many values it checked.
func GoldenRoundTrip(t *testing.T, version int, interopDir string, files []string, types GoldenTypes) int {
	t.Helper()
	v := NewSchemaValidator(t, interopDir)
	checked := 0
	for _, path := range files {
		checked += TypesRoundTrip(t, v, version, filepath.Base(path), readGolden(t, path), types)
	}
	return checked
}

// TypesRoundTrip is GoldenRoundTrip for the messages of one conversation,
// named where in its failures, with a validator already running.
func TypesRoundTrip(t *testing.T, v *SchemaValidator, version int, where string, msgs []GoldenMessage, types GoldenTypes) int {
	t.Helper()
	checked := 0
	pending := map[string]string{} // direction:id -> method
	for i, m := range msgs {
		method, member, value := classify(t, m, pending)
		target := types(method, member)
		if target == nil || value == nil {
			continue
		}
		at := fmt.Sprintf("%s:%d %s %s", where, i+1, method, member)
		require.NoError(t, json.Unmarshal(value, target), at)
		encoded, err := json.Marshal(target)
		require.NoError(t, err, at)
		def := fmt.Sprintf("%T", target)[len("*acpvN."):]
		want, err := v.Check(version, true, def, value)
		require.NoError(t, err, "%s: the message itself is invalid", at)
		got, err := v.Check(version, true, def, encoded)
		require.NoError(t, err, "%s: the SDK refuses %s", at, encoded)
		assert.Equal(t, withoutNulls(t, want), withoutNulls(t, got), "%s: the SDK reads %s, re-encoded as %s, differently", at, value, encoded)
		checked++
	}
	return checked
}

// classify names what a message carries: the method and member of its
// params, result or error, matching an answer to its request by direction
// and ID.
func classify(t *testing.T, m GoldenMessage, pending map[string]string) (method, member string, value json.RawMessage) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	require.NoError(t, json.Unmarshal(m.Msg, &msg))
	switch {
	case msg.Method != "" && msg.ID != nil:
		pending[m.Dir+":"+string(msg.ID)] = msg.Method
		return msg.Method, "params", msg.Params
	case msg.Method != "":
		return msg.Method, "notification", msg.Params
	}
	other := map[string]string{"in": "out", "out": "in"}[m.Dir]
	method = pending[other+":"+string(msg.ID)]
	if msg.Error != nil {
		return method, "error", msg.Error
	}
	return method, "result", msg.Result
}

func readGolden(t *testing.T, path string) []GoldenMessage {
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []GoldenMessage
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var m GoldenMessage
		require.NoError(t, json.Unmarshal(line, &m), "%s: %s", path, line)
		out = append(out, m)
	}
	return out
}

// DecodeCase is a message crafted to test decoding's checks: a value of
// the schema's definition Def, and whether the schema accepts it.
type DecodeCase struct {
	Def, JSON string
	Valid     bool
}

// Valid is a case the schema accepts.
func Valid(def, json string) DecodeCase { return DecodeCase{Def: def, JSON: json, Valid: true} }

// Invalid is a case the schema refuses.
func Invalid(def, json string) DecodeCase { return DecodeCase{Def: def, JSON: json} }

// DecodeChecksAgree decodes each case into its Go type (types is the
// generated package's registry) and has the SDK's validators read it: both
// must accept the valid cases and refuse the others.
func DecodeChecksAgree(t *testing.T, version int, interopDir string, types map[string]func() any, cases []DecodeCase) {
	v := NewSchemaValidator(t, interopDir)
	for _, c := range cases {
		newValue := types[c.Def]
		require.NotNil(t, newValue, c.Def)
		_, sdkErr := v.Check(version, true, c.Def, json.RawMessage(c.JSON))
		goErr := json.Unmarshal([]byte(c.JSON), newValue())
		if c.Valid {
			assert.NoError(t, sdkErr, "the SDK refuses %s %s", c.Def, c.JSON)
			assert.NoError(t, goErr, "the Go type refuses %s %s", c.Def, c.JSON)
		} else {
			assert.Error(t, sdkErr, "the SDK accepts %s %s", c.Def, c.JSON)
			assert.Error(t, goErr, "the Go type accepts %s %s", c.Def, c.JSON)
		}
	}
}
