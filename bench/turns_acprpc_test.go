package bench

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAcprpcTurnsPhases runs the turn workload of ServeAcprpcTurns for a
// few sessions, cancels every turn with session/cancel, and checks that each
// prompt is answered cancelled and each phase stamped once per message or
// turn, in the order of the cascade.
func TestAcprpcTurnsPhases(t *testing.T) {
	for _, graceful := range []bool{true, false} {
		t.Run(fmt.Sprintf("graceful=%v", graceful), func(t *testing.T) {
			const n = 3
			phases := NewPhases(16)
			agentIn, clientOut, err := os.Pipe()
			require.NoError(t, err)
			clientIn, agentOut, err := os.Pipe()
			require.NoError(t, err)
			done := ServeAcprpcTurns(agentIn, agentOut, graceful, true, phases)

			held := make(chan struct{}, 2*n)
			hold := func(ctx context.Context) error { // the client holds both requests until they are cancelled
				held <- struct{}{}
				<-ctx.Done()
				return ctx.Err()
			}
			client := acpv1.Client{
				SessionUpdate: func(context.Context, acpv1.SessionNotification) {},
				SessionRequestPermission: func(ctx context.Context, _ acpv1.RequestPermissionRequest) (acpv1.RequestPermissionResponse, error) {
					return acpv1.RequestPermissionResponse{}, hold(ctx)
				},
				TerminalCreate: func(ctx context.Context, _ acpv1.CreateTerminalRequest) (acpv1.CreateTerminalResponse, error) {
					return acpv1.CreateTerminalResponse{}, hold(ctx)
				},
			}
			conn := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(clientIn, clientOut), client.Router(), nil)
			ctx := context.Background()
			_, err = acpv1.ToAgent.Initialize.Call(ctx, conn, acpv1.InitializeRequest{ProtocolVersion: acpv1.Version,
				ClientCapabilities: acpv1.ClientCapabilities{Terminal: true}})
			require.NoError(t, err)
			answers := make(chan acpv1.PromptResponse, n)
			sessions := make([]acpv1.SessionID, n)
			for i := range sessions {
				s, err := acpv1.ToAgent.SessionNew.Call(ctx, conn, acpv1.NewSessionRequest{Cwd: "/", MCPServers: []acpv1.MCPServer{}})
				require.NoError(t, err)
				sessions[i] = s.SessionID
				go func() {
					res, err := acpv1.ToAgent.SessionPrompt.Call(ctx, conn, acpv1.TextPrompt(s.SessionID, "slow"))
					assert.NoError(t, err)
					answers <- res
				}()
			}
			for range 2 * n {
				<-held
			}
			for _, s := range sessions {
				require.NoError(t, acpv1.ToAgent.SessionCancel.Notify(ctx, conn, acpv1.CancelNotification{SessionID: s}))
			}
			for range n {
				assert.Equal(t, acpv1.StopReasonCancelled, (<-answers).StopReason)
			}
			require.NoError(t, conn.Close())
			<-done

			counts := map[Phase]int{PhaseCancelRead: n, PhaseCancelled: n, PhaseCancelSent: 2 * n, PhaseHandlerReturned: n, PhaseAnswerSent: n}
			for ph, want := range counts {
				assert.Len(t, phases.Stamps(ph), want, PhaseNames[ph])
			}
			first := func(ph Phase) int64 { return phases.Stamps(ph)[0] }
			// The read loop's next message can come after a nested call has
			// sent its cancel: the two are not ordered.
			assert.LessOrEqual(t, first(PhaseCancelRead), first(PhaseCancelled))
			assert.LessOrEqual(t, first(PhaseCancelRead), first(PhaseCancelSent))
			assert.LessOrEqual(t, first(PhaseHandlerReturned), first(PhaseAnswerSent))
			last := func(ph Phase) int64 { s := phases.Stamps(ph); return s[len(s)-1] }
			assert.LessOrEqual(t, last(PhaseHandlerReturned), last(PhaseAnswerSent))
		})
	}
}
