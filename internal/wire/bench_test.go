package wire

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParse reads messages of the shapes the scanner meets: a short
// request, an answer of many small objects and arrays, a 1 MiB string
// param, and a long array of numbers.
func BenchmarkParse(b *testing.B) {
	var objects strings.Builder
	objects.WriteString(`{"jsonrpc":"2.0","id":7,"result":{"entries":[`)
	for i := range 1000 {
		if i > 0 {
			objects.WriteByte(',')
		}
		fmt.Fprintf(&objects, `{"name":"f%d","size":%d,"tags":["a","b"],"meta":{"x":true,"y":null}}`, i, i*10)
	}
	objects.WriteString(`]}}`)
	numbers := `{"jsonrpc":"2.0","id":8,"result":[` + strings.Repeat("12345,", 20000) + `0]}`
	for _, c := range []struct{ name, msg string }{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}`},
		{"objects", objects.String()},
		{"string1MiB", `{"jsonrpc":"2.0","id":2,"method":"x","params":{"text":"` + strings.Repeat("a", 1<<20) + `"}}`},
		{"numbers", numbers},
	} {
		msg := []byte(c.msg)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				if _, bad := Parse(msg); bad != nil {
					b.Fatal(bad.Msg)
				}
			}
		})
	}
}
