package wirefuzz

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDepth(t *testing.T) {
	for in, want := range map[string]int{
		`1`: 0, `[]`: 1, `{"a":[{}]}`: 3, `"[[["`: 0, `["\"[["]`: 1, `[[`: 2,
	} {
		assert.Equal(t, want, Depth([]byte(in)), in)
	}
}

func TestIsAnswer(t *testing.T) {
	for in, want := range map[string]bool{
		`{"id":1,"result":null}`:            true,
		`{"id":1,"error":{}}`:               true,
		`{"id":1,"method":null,"result":1}`: true,
		`{"id":1,"method":"m","result":1}`:  false,
		`{"id":1,"method":"m"}`:             false,
		`{"jsonrpc":"2.0","id":1}`:          false,
	} {
		var obj map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(in), &obj))
		assert.Equal(t, want, IsAnswer(obj), in)
	}
}
