package main

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One judge: run's transcript of every test agent, replayed through report,
// gets the same verdict, rule by rule, on the rules of the whole
// conversation (conversationRules), which run, proxy and report take from
// the one monitor.
func TestRunTranscriptsReplayToTheSameVerdicts(t *testing.T) {
	faults := []string{"correct"}
	for _, c := range brokenRules {
		if !c.terminal {
			faults = append(faults, c.fault)
		}
	}
	for _, fault := range faults {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			rep, err := runChecks(context.Background(), testOptions(t, fault))
			require.NoError(t, err)
			replays := []*Report{replay("v1", recording{lines: rep.Wire, end: runEnd(rep.CancelsUnderWay...)})}
			if len(rep.WireV2) > 0 {
				replays = append(replays, replay("v2", recording{lines: rep.WireV2, end: runEnd()}))
			}
			for _, rule := range conversationRules {
				assert.Equal(t, rep.result(rule.ID).Status, verdict(replays, rule), "%s: run %+v", rule.ID, rep.result(rule.ID))
			}
		})
	}
}

// runEnd is how run ends a conversation, as a record would say it: the
// agent had every bound to answer, and the session/cancel on the lines
// underWay went to slow turns under way.
func runEnd(underWay ...int) recordEnd {
	return recordEnd{Why: "acpcheck run closed the agent's stdin", CancelsUnderWay: underWay}
}

// verdict is the replays' verdict on rule together, as run gives one over
// its two connections: failed if either failed, else passed if either
// passed. Run judges the agent alone (acpcheck, its client, breaks the
// client's rules on purpose), so a replay's finding against the client
// leaves the rule passed.
func verdict(reps []*Report, rule Rule) Status {
	out := NotBrought
	for _, rep := range reps {
		res := rep.result(rule.ID)
		switch {
		case res.Status == Fail && slices.ContainsFunc(res.Findings, func(f Finding) bool { return f.Side == sideAgent }):
			return Fail
		case res.Status != NotBrought:
			out = Pass
		}
	}
	return out
}

// Each rule of run is judged once: by the monitor over the conversation, or
// by its scenario, which says what run knows there that the wire does not.
func TestEachRuleHasOneJudge(t *testing.T) {
	for _, rule := range allRules {
		conversation := slices.ContainsFunc(conversationRules, func(r Rule) bool { return r.ID == rule.ID })
		why, scenario := scenarioRules[rule.ID]
		assert.True(t, conversation != scenario, "%s: judged by the monitor %v, by its scenario %v", rule.ID, conversation, scenario)
		assert.True(t, !scenario || why != "", rule.ID)
	}
	for id := range scenarioRules {
		assert.True(t, slices.ContainsFunc(allRules, func(r Rule) bool { return r.ID == id }), "%s is no rule of run", id)
	}
}
