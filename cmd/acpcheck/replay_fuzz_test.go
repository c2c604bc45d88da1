package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Whatever a recording holds, reading it either fails or gives lines
// numbered 1 to n, each going one of the two ways, and their replay reports
// every watched rule, its findings citing lines that exist, as text and as
// a web page.
func FuzzReadRecording(f *testing.F) {
	f.Add([]byte(`{"seq":2,"t_ms":1,"dir":"from_agent","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":2}}"}
{"seq":1,"t_ms":0,"dir":"to_agent","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}"}
{"seq":3,"dir":"to_agent","raw_base64":"/w=="}
`))
	f.Add([]byte(`{"seq":1,"dir":"to_agent","raw":"{\"id\":1,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"s\"}}"}
{"seq":2,"dir":"to_agent","raw":"{\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"s\"}}"}
{"seq":3,"dir":"from_agent","raw":"{\"id\":1,\"error\":{\"code\":-32603,\"message\":\"x\"}}"}
{"seq":4,"dir":"from_agent","raw":"{\"id\":1,\"result\":{}}"}
{"seq":5,"dir":"from_agent","raw":"{\"error\":{\"code\":-32601}}"}`))
	f.Add([]byte("{\"seq\":1,\"dir\":\"sideways\",\"raw\":\"\"}\n"))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := readRecording(bytes.NewReader(data))
		if err != nil {
			return
		}
		lines := rec.lines
		for i, l := range lines {
			require.Equal(t, i+1, l.Seq)
			require.Contains(t, []string{toAgent, fromAgent}, l.Dir)
		}
		rep := replay("fuzz.jsonl", rec)
		require.Len(t, rep.Results, len(watchedRules))
		for _, r := range rep.Results {
			for _, fd := range r.Findings {
				for _, seq := range fd.Lines {
					_, ok := rep.line(fd.Protocol, seq)
					assert.True(t, ok, "%s cites line %d of %d", r.ID, seq, len(lines))
				}
			}
		}
		rep.WriteText(io.Discard)
		require.NoError(t, rep.WriteHTML(io.Discard))
	})
}
