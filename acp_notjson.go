package acprpc

import (
	"strings"
	"unicode/utf8"

	"github.com/acpkit/acprpc/internal/agentpeer"
)

func init() {
	agentpeer.Mark = func(conn any) { conn.(*Conn).acp.versions.peerAgent.Store(true) }
}

// notJSON logs a line the peer sent that is not JSON, with its first bytes,
// the first few times on a connection (repeatedWarning).
// On stdio the usual cause is an agent that prints to its stdout (a banner,
// a debug line), which carries ACP messages only; the one who reads the log
// is most often the author of the client that runs it, so the line is
// worded for them when this side is known to be a client (it has sent
// initialize, or agentproc started the agent), and names the likely cause
// otherwise.
func (a *acpRules) notJSON(line []byte) {
	msg := "acprpc: the peer sent a line that is not JSON; it is dropped, and answered -32700. " +
		"If the peer is an agent, its stdout carries ACP messages only, and its logs go to stderr: " +
		"a print to stdout in the agent (fmt.Println, console.log, print) does this"
	if a.versions.peerAgent.Load() {
		msg = "acprpc: the agent wrote a line that is not JSON to its stdout; it is dropped, and answered -32700. " +
			"An agent's stdout carries ACP messages only, and its logs go to stderr: " +
			"a print to stdout in the agent (fmt.Println, console.log, print) does this; move it to stderr, or report it to the agent's authors"
	}
	if msg, ok := a.conn.peerWarned.notJSON.due(msg); ok {
		a.conn.log.Warn(msg, "line", firstBytes(line, notJSONShown), "size", len(line))
	}
}

// notJSONShown is how many bytes of a line that is not JSON are logged:
// enough to recognise a print, not so many that a long one floods the log.
const notJSONShown = 80

// firstBytes returns the first n bytes of b as text, cut at a character's
// boundary, with "..." when the line goes on.
func firstBytes(b []byte, n int) string {
	if len(b) <= n {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return strings.ToValidUTF8(string(b[:cut]), "\uFFFD") + "..."
}
