package bench

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

	acp "github.com/coder/acp-go-sdk"
)

// coder's ACP SDK is used only through its typed agent and client sides.
// On a cancelled Prompt its client sends $/cancel_request and session/cancel
// and returns at once; its agent cancels the handler's context for either.

func init() { register(coderPeer{}) }

type coderPeer struct{}

func (coderPeer) Name() string          { return "coder" }
func (coderPeer) Cancel() CancelSupport { return CancelBuiltIn }

// coderQuiet discards the SDK's diagnostics unless BENCH_PEER_LOG is set.
var coderQuiet = func() *slog.Logger {
	if os.Getenv("BENCH_PEER_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}()

var errCoderUnused = errors.New("not part of the benchmark workload")

// coderAgent implements acp.Agent for the workload.
type coderAgent struct {
	wl   *Workload
	conn *acp.AgentSideConnection
}

func (a *coderAgent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	text := ""
	if len(p.Prompt) > 0 && p.Prompt[0].Text != nil {
		text = p.Prompt[0].Text.Text
	}
	stop, err := a.wl.Prompt(ctx, string(p.SessionId), text, func(u UpdateParams) error {
		return a.conn.SessionUpdate(ctx, acp.SessionNotification{
			SessionId: acp.SessionId(u.SessionID),
			Update:    acp.UpdateAgentMessageText(u.Update.Content.Text),
		})
	})
	if err != nil {
		return acp.PromptResponse{}, err
	}
	return acp.PromptResponse{StopReason: acp.StopReason(stop)}, nil
}

func (a *coderAgent) Cancel(ctx context.Context, p acp.CancelNotification) error { return nil }

func (a *coderAgent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, errCoderUnused
}
func (a *coderAgent) Logout(context.Context, acp.LogoutRequest) (acp.LogoutResponse, error) {
	return acp.LogoutResponse{}, errCoderUnused
}
func (a *coderAgent) Initialize(context.Context, acp.InitializeRequest) (acp.InitializeResponse, error) {
	return acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersionNumber}, nil
}
func (a *coderAgent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, errCoderUnused
}
func (a *coderAgent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, errCoderUnused
}
func (a *coderAgent) NewSession(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	return acp.NewSessionResponse{SessionId: "s1"}, nil
}
func (a *coderAgent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, errCoderUnused
}
func (a *coderAgent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, errCoderUnused
}
func (a *coderAgent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, errCoderUnused
}

type coderServer struct{ conn *acp.AgentSideConnection }

func (coderPeer) Serve(r io.Reader, w io.Writer, wl *Workload) Server {
	a := &coderAgent{wl: wl}
	a.conn = acp.NewAgentSideConnection(a, w, r)
	a.conn.SetLogger(coderQuiet)
	return &coderServer{conn: a.conn}
}

// Close is a no-op: the SDK's connection has no Close and ends when its
// input reaches EOF, which happens when the caller closes the streams.
func (s *coderServer) Close() error { return nil }

// coderClient implements acp.Client for the workload.
type coderClient struct {
	conn    *acp.ClientSideConnection
	updates *Counter
}

func (c *coderClient) SessionUpdate(ctx context.Context, p acp.SessionNotification) error {
	c.updates.Inc()
	return nil
}
func (c *coderClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, errCoderUnused
}
func (c *coderClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, errCoderUnused
}
func (c *coderClient) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{}, errCoderUnused
}
func (c *coderClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, errCoderUnused
}
func (c *coderClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, errCoderUnused
}
func (c *coderClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, errCoderUnused
}
func (c *coderClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, errCoderUnused
}
func (c *coderClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, errCoderUnused
}

func (coderPeer) Dial(r io.Reader, w io.Writer, updates *Counter) Client {
	c := &coderClient{updates: updates}
	c.conn = acp.NewClientSideConnection(c, w, r)
	c.conn.SetLogger(coderQuiet)
	return c
}

func (c *coderClient) Prompt(ctx context.Context, sessionID, text string) (string, error) {
	res, err := c.conn.Prompt(ctx, acp.PromptRequest{
		SessionId: acp.SessionId(sessionID),
		Prompt:    []acp.ContentBlock{acp.TextBlock(text)},
	})
	if err != nil {
		return "", err
	}
	return string(res.StopReason), nil
}

// Close is a no-op for the same reason as coderServer.Close.
func (c *coderClient) Close() error { return nil }
