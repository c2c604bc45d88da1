package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// violations collects what a proxy reports.
type violations struct {
	mu  sync.Mutex
	got []violation
}

func (v *violations) add(x violation) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.got = append(v.got, x)
}

func (v *violations) rules() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for _, x := range v.got {
		out = append(out, x.Rule.ID)
	}
	return out
}

// sideRules lists the rules broken by one side.
func (v *violations) sideRules(side string) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for _, x := range v.got {
		if x.Side == side {
			out = append(out, x.Rule.ID)
		}
	}
	return out
}

// chunked writes b to w in chunks of random sizes, cutting lines
// anywhere, then closes w.
func chunked(w io.WriteCloser, b []byte) {
	r := rand.New(rand.NewPCG(1, 2))
	for len(b) > 0 {
		n := min(len(b), 1+r.IntN(9000))
		if _, err := w.Write(b[:n]); err != nil {
			break
		}
		b = b[n:]
	}
	w.Close()
}

// messy is input no editor would send but a proxy must carry unchanged:
// lines of every length, some not JSON, CRLF ends, bytes that are not
// UTF-8, blank lines, and a last line with no newline.
func messy() []byte {
	var b bytes.Buffer
	for i := range 6000 {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"_x/ping","params":{"pad":"%s"}}`+"\n", i, strings.Repeat("x", i%3000))
		case 1:
			fmt.Fprintf(&b, "not json %d \xff\xfe\r\n", i)
		case 2:
			b.WriteString("\n")
		case 3:
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"_x/note","params":{"n":%d}}`+"\n", i)
		case 4:
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":"s%d","result":{}}`+"\n", i)
		}
	}
	b.WriteString(`{"jsonrpc":"2.0","method":"_x/last"`)
	return b.Bytes()
}

func proxyTo(t *testing.T, agent string, input func(io.WriteCloser)) (code int, out []byte, record []Line, v *violations) {
	t.Helper()
	inR, inW := io.Pipe()
	go input(inW)
	var stdout, stderr bytes.Buffer
	recPath := filepath.Join(t.TempDir(), "wire.jsonl")
	rec, err := os.Create(recPath)
	require.NoError(t, err)
	v = &violations{}
	end, err := runProxy(context.Background(), proxyOptions{Argv: []string{os.Args[0]}, Env: []string{agentEnv + "=" + agent}, Record: rec},
		inR, &stdout, &stderr, v.add)
	require.NoError(t, err)
	inR.Close() // the editor's side, if the agent left first
	require.NoError(t, rec.Close())
	read, err := readRecordingFile(recPath)
	require.NoError(t, err)
	require.Zero(t, read.cut)
	require.NotEmpty(t, read.end.Why, "the record says how the conversation ended")
	return end.code, stdout.Bytes(), read.lines, v
}

// Every byte in, cut anywhere, comes out unchanged and in order, and the
// agent's flood after it too; the record holds every line of both ways.
func TestProxyForwardsEveryByteUnchanged(t *testing.T) {
	in := messy()
	code, out, record, _ := proxyTo(t, agentCat, func(w io.WriteCloser) { chunked(w, in) })
	assert.Equal(t, 0, code)
	want := append(append([]byte(nil), in...), flood()...)
	require.Equal(t, len(want), len(out))
	require.True(t, bytes.Equal(want, out), "the output differs from the input")

	var toLines, fromLines []string
	for _, l := range record {
		raw := l.Raw
		if l.Base64 != nil {
			raw = string(l.Base64)
		}
		if l.Dir == toAgent {
			toLines = append(toLines, raw)
		} else {
			fromLines = append(fromLines, raw)
		}
	}
	sameLines(t, lines(in), toLines)
	sameLines(t, lines(want), fromLines)
}

// sameLines compares long lists of lines, saying where they part.
func sameLines(t *testing.T, want, got []string) {
	t.Helper()
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			t.Fatalf("line %d: recorded %q, want %q", i+1, shorten(got[i]), shorten(want[i]))
		}
	}
	require.Equal(t, len(want), len(got), "lines recorded")
}

// lines cuts b as the record does: at each newline, a CR before it
// dropped, the last line kept without one.
func lines(b []byte) []string {
	s := strings.Split(string(b), "\n")
	if s[len(s)-1] == "" {
		s = s[:len(s)-1]
	}
	for i := range s {
		s[i] = strings.TrimSuffix(s[i], "\r")
	}
	return s
}

// An agent that floods and exits in the middle of a line, reading nothing,
// while the editor holds its input open or writes without end: all the
// agent wrote comes out, its cut line last, the record holds every line of
// it, and the agent's exit status is the proxy's.
func TestProxyAgentExitKeepsItsOutput(t *testing.T) {
	want := append(flood(), cutLine...)
	for name, editor := range map[string]func(w io.WriteCloser){
		"editor silent": func(w io.WriteCloser) {}, // closed once the proxy has returned
		"editor writing": func(w io.WriteCloser) {
			for b := messy(); ; {
				if _, err := w.Write(b); err != nil {
					return // the proxy has returned
				}
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, out, record, _ := proxyTo(t, agentFloodExit, editor)
			assert.Equal(t, 3, code)
			require.Equal(t, len(want), len(out), "bytes forwarded")
			require.True(t, bytes.Equal(want, out), "the agent's output was not forwarded unchanged")
			var fromLines []string
			for _, l := range record {
				if l.Dir == fromAgent {
					fromLines = append(fromLines, l.Raw)
				}
			}
			sameLines(t, lines(want), fromLines)
			assert.Equal(t, cutLine, fromLines[len(fromLines)-1])
		})
	}
}

// A conversation with the test agent, as an editor would have it.
const conversation = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}
{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}
{nope
{"foo":1}
{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"slow"}]}}
{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}
{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":77}}
`

func TestProxyReportsViolationsAsTheyHappen(t *testing.T) {
	for _, c := range []struct {
		fault string
		rules []string
	}{
		{"correct", nil},
		{faultCancelError, []string{ruleCancelStop.ID}},
		{faultCancelEndTurn, []string{ruleCancelStop.ID}},
		{faultCancelTwice, []string{ruleOneAnswer.ID}},
		{faultUpdateAfterCancel, []string{ruleUpdateAfter.ID}},
		{faultAnswerNote, []string{ruleNoteUnanswered.ID, ruleEnvelope.ID}}, // its answer has no id member
		{faultAnswerUnknownID, []string{ruleUnknownID.ID}},
		// The prompt is still open when the editor closes stdin, right
		// after its cancel: the editor cut the turn short, and the proxy
		// cannot tell an agent about to answer from one that never will.
		{faultCancelIgnored, nil},
	} {
		t.Run(c.fault, func(t *testing.T) {
			t.Parallel()
			_, out, record, v := proxyTo(t, "correct,"+c.fault, func(w io.WriteCloser) { chunked(w, []byte(conversation)) })
			// The editor's two lines that are not messages break framing,
			// the client's MUST: they are the client's findings.
			assert.ElementsMatch(t, append([]string{ruleFraming.ID, ruleFraming.ID}, c.rules...), v.rules())
			for _, x := range v.got {
				want := sideAgent
				if x.Rule.ID == ruleFraming.ID {
					want = sideClient
				}
				assert.Equal(t, want, x.Side, "%+v", x)
			}
			for _, x := range v.got {
				for _, seq := range x.Lines {
					require.LessOrEqual(t, seq, len(record), "%+v", x)
				}
			}
			assert.Contains(t, string(out), `"id":null,"error":{"code":-32700`)
		})
	}
}

func TestProxyBadCommandLines(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, proxyCommand(context.Background(), nil, strings.NewReader(""), &stdout, &stderr))
	assert.Contains(t, stderr.String(), "no agent command")
	stderr.Reset()
	assert.Equal(t, 2, proxyCommand(context.Background(), []string{"--", filepath.Join(t.TempDir(), "none")}, strings.NewReader(""), &stdout, &stderr))
	assert.Contains(t, stderr.String(), "cannot start the agent")
	stderr.Reset()
	assert.Equal(t, 2, proxyCommand(context.Background(), []string{"-record", filepath.Join(t.TempDir(), "no", "dir"), "--", "agent"}, strings.NewReader(""), &stdout, &stderr))
	assert.Contains(t, stderr.String(), "cannot record the wire")
}

// An editor that cancels a turn under way: an end_turn at once may have
// crossed the cancel on the wire, which the proxy cannot tell from a turn
// that ignored it, and is not blamed; one long after the cancel is.
func TestProxyDoesNotBlameACrossedCancel(t *testing.T) {
	for _, c := range []struct {
		fault string
		rules []string
	}{
		{faultCrossed, nil},
		{faultCancelEndTurn, []string{ruleCancelStop.ID}},
	} {
		t.Run(c.fault, func(t *testing.T) {
			t.Parallel()
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			v := &violations{}
			done := make(chan error, 1)
			go func() {
				_, err := runProxy(context.Background(), proxyOptions{Argv: []string{os.Args[0]}, Env: []string{agentEnv + "=correct," + c.fault}}, inR, outW, io.Discard, v.add)
				outW.Close()
				done <- err
			}()
			out := readLines(outR)
			_, err := io.WriteString(inW, strings.Join(strings.Split(conversation, "\n")[:5], "\n")+"\n") // up to the prompt
			require.NoError(t, err)
			awaitLine(t, out, "Working on it.", time.Minute)
			_, err = io.WriteString(inW, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`+"\n")
			require.NoError(t, err)
			awaitLine(t, out, `"stopReason"`, time.Minute)
			require.NoError(t, inW.Close())
			go func() { _, _ = io.Copy(io.Discard, outR) }()
			require.NoError(t, <-done)
			inR.Close()
			assert.ElementsMatch(t, c.rules, v.sideRules(sideAgent))
			assert.ElementsMatch(t, []string{ruleFraming.ID, ruleFraming.ID}, v.sideRules(sideClient), "the editor's two lines that are not messages")
		})
	}
}
