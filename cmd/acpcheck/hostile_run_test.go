package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run against hostile agents: each run ends within its bounds, with a
// report that says what the agent did, and never a wrong pass.
func TestRunAgainstHostileAgents(t *testing.T) {
	for _, c := range []struct {
		fault   string
		timeout time.Duration // -timeout: short where the run waits it out, testOptions' where the agent is only slow to read
		check   func(t *testing.T, rep *Report)
	}{
		{faultFlood, 0, func(t *testing.T, rep *Report) { // 2 MiB of updates in the quick turn, read within -timeout on a loaded machine too: every rule holds
			assert.Empty(t, failed(t, rep))
			assert.Greater(t, len(rep.Wire), 2000)
		}},
		{faultNoise, 3 * time.Second, func(t *testing.T, rep *Report) { // lines that are not JSON between its messages: kept, and the rules still judged
			assert.Contains(t, wireText(rep.Wire), "this is not JSON\n")
			assert.Equal(t, Pass, rep.result(rulePromptTurn.ID).Status)
		}},
		{faultSilent, 3 * time.Second, func(t *testing.T, rep *Report) { // no answer to initialize
			assert.Equal(t, Fail, rep.result(ruleInitialize.ID).Status)
			assert.Contains(t, rep.result(ruleInitialize.ID).Findings[0].Detail, "not answered within")
		}},
		{faultCloseStdout, 3 * time.Second, func(t *testing.T, rep *Report) { // its output ends after initialize, the process stays
			assert.Equal(t, Pass, rep.result(ruleInitialize.ID).Status, "%+v", rep.result(ruleInitialize.ID))
			assert.Equal(t, Fail, rep.result(ruleSessionNew.ID).Status)
		}},
	} {
		t.Run(c.fault, func(t *testing.T) {
			t.Parallel()
			o := testOptions(t, c.fault)
			if c.timeout != 0 {
				o.Timeout = c.timeout
			}
			start := time.Now()
			rep, err := runChecks(context.Background(), o)
			require.NoError(t, err)
			// Two connections, each at most one -timeout for initialize, the
			// stop's bounds, and slack for a loaded machine.
			assert.Less(t, time.Since(start), 2*(o.Timeout+o.ExitWait+defaultStop.term+defaultStop.kill)+10*time.Second)
			c.check(t, rep)
			var text strings.Builder
			rep.WriteText(&text)
			assert.NotEmpty(t, text.String())
		})
	}
}
