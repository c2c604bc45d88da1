package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every spelling of an integer is that integer's key; a number that is no
// integer of 64 bits is no ID.
func TestKeyOfIntegerValuedNumbers(t *testing.T) {
	same := map[int64][]string{
		1:                    {"1", "1e0", "1E0", "1.0", "1.000", "10e-1", "0.1e1", "100E-2", "1e+0", "0.001e3"},
		0:                    {"0", "-0", "0.0", "0e5", "0e-999999999999", "-0.000e1", "0e99999999999999999999"},
		-25:                  {"-25", "-2.5e1", "-2.50E+1", "-250e-1"},
		9223372036854775807:  {"9223372036854775807", "9.223372036854775807e18", "92233720368547758070e-1"},
		-9223372036854775808: {"-9223372036854775808", "-9.223372036854775808E18", "-9223372036854775808.0"},
		1000000000000000000:  {"1e18", "1000000000000000000", "0.0000000000000000001e37", "10000000000000000000e-1"},
	}
	for n, spellings := range same {
		want, ok := KeyOf([]byte(spellings[0]))
		assert.True(t, ok, spellings[0])
		assert.Equal(t, n, want.num)
		for _, s := range spellings {
			k, ok := KeyOf([]byte(s))
			assert.True(t, ok, s)
			assert.Equal(t, want, k, "%s is %d", s, n)
		}
	}
	for _, s := range []string{
		"1.5", "1e-1", "0.5e0", "9223372036854775808", "9.223372036854775808e18", "-9223372036854775809",
		"1e19", "1e400", "1e99999999999999999999", "100000000000000000000e-1",
		"01", "1.", ".5", "1e", "+1", "-", "", "1 ", "0x10", "true", "null", "{}", "[1]",
	} {
		_, ok := KeyOf([]byte(s))
		assert.False(t, ok, "%q is no ID", s)
	}
	one, _ := KeyOf([]byte("1"))
	str, _ := KeyOf([]byte(`"1"`))
	assert.NotEqual(t, one, str, "1 and \"1\" are different IDs")
}
