package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The agent on SIGTERM in the middle of a turn: it shuts down gracefully,
// so the client reads the cascade and the turn's cancelled answer before
// the agent's stdout ends, every time, and the agent exits with status 0
// and no warning.

// signalRounds is how many times each signal test repeats: a shutdown that
// drops the answer now and then must fail here.
const signalRounds = 10

// sigterm sends the agent SIGTERM.
func (p *peer) sigterm() {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGTERM))
}

// expectExit reads to the end of the agent's stdout, which must bring
// nothing more, and its exit status, which must be 0, and returns how long
// that took.
func (p *peer) expectExit() time.Duration {
	p.t.Helper()
	start := time.Now()
	timeout := time.After(wait)
	for {
		select {
		case m, ok := <-p.lines:
			if !ok {
				require.NoError(p.t, <-p.exited, "the agent must exit with status 0")
				return time.Since(start)
			}
			p.seen = append(p.seen, m)
			require.Failf(p.t, "a line after the turn's answer", "%s", m.Raw)
		case <-timeout:
			require.FailNow(p.t, "the agent did not exit after its shutdown")
		}
	}
}

// assertNoWarnings checks that the agent logged nothing at warning level or
// above.
func (p *peer) assertNoWarnings() {
	p.t.Helper()
	for _, line := range strings.Split(p.log.String(), "\n") {
		assert.NotRegexp(p.t, `level=(WARN|ERROR)`, line)
	}
}

// SIGTERM mid-turn, the client confirming the cancelled requests as a client
// does: the agent cancels both requests, waits for the confirmations, and
// ends the turn with {"stopReason":"cancelled"} after its last update; then
// its stdout ends and it exits with status 0, with no warning.
func TestSIGTERMMidTurn(t *testing.T) {
	for round := range signalRounds {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			p := startAgent(t)
			sid := p.handshake()
			permID, termID := p.prompt("3", sid, "slow: analyze file X")
			p.sigterm()
			p.expectCancels(permID, termID)
			p.answerCancelled(permID, termID)
			p.expectCancelledTurn("3")
			t.Logf("exited %v after the turn's answer", p.expectExit())
			p.assertAnsweredOnce("3")
			p.assertNoWarnings()
			assert.Contains(t, p.log.String(), "the agent is shutting down", "the turn saw the shutdown as its cause")
		})
	}
}

// SIGTERM mid-turn with a client that never confirms: the agent waits for
// the confirmations no longer than it would after any cancel, and the turn
// still ends with its cancelled answer before the agent exits.
func TestSIGTERMMidTurnUnconfirmed(t *testing.T) {
	p := startAgent(t)
	sid := p.handshake()
	permID, termID := p.prompt("3", sid, "slow: analyze file X")
	p.sigterm()
	p.expectCancels(permID, termID)
	p.expectCancelledTurn("3")
	p.expectExit()
	p.assertNoWarnings()
}

// SIGTERM between turns: nothing is in flight, so nothing more is written,
// and the agent exits at once with status 0.
func TestSIGTERMIdle(t *testing.T) {
	p := startAgent(t)
	p.handshake()
	p.sigterm()
	p.expectExit()
	p.assertNoWarnings()
}

// With -graceful=false a cancelled turn does not wait for the client to
// confirm the requests it cancelled: its answer follows the cancels at
// once, with no confirmation sent.
func TestNotGracefulEndsTheTurnAtOnce(t *testing.T) {
	p := startAgent(t, "-graceful=false")
	sid := p.handshake()
	permID, termID := p.prompt("3", sid, "slow: analyze file X")
	p.sendf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, sid)
	p.expectCancels(permID, termID)
	start := time.Now()
	p.expectCancelledTurn("3")
	// A graceful agent would wait a full second here for the confirmations
	// that never come.
	assert.Less(t, time.Since(start), 900*time.Millisecond, "the turn waited for confirmations")
	rest := p.closeStdin()
	assert.Empty(t, rest)
}

// SIGTERM mid-turn in ACP v2: the work is cancelled, its requests too, and
// its one idle state_update, with stop reason cancelled, comes before the
// agent's stdout ends.
func TestV2SIGTERMMidTurn(t *testing.T) {
	for round := range signalRounds {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			p := startAgent(t)
			sid := p.handshakeV2()
			_, permID, termID := p.promptV2("3", sid, "slow: analyze file X")
			p.sigterm()
			p.expectToolCallEnd(permID, termID, "cancelled", "Stopped (the agent is shutting down)")
			p.expectExit()
			assert.Equal(t, 1, p.countIdles())
			p.assertNoWarnings()
		})
	}
}
