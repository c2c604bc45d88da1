//go:build linux

package agents

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// offlineEnv keeps an agent's own look-ups off the network: npm (an update
// check's `npm view`) finds no registry, and a client that honours the
// proxy variables sends everything but loopback to a port nobody listens
// on, so a look-up the agent cannot do without fails the test.
func offlineEnv(t *testing.T) []string {
	const nowhere = "http://127.0.0.1:9"
	return append(scratchEnv(t), "npm_config_offline=true", "npm_config_registry="+nowhere+"/",
		"npm_config_update_notifier=false", "npm_config_cache="+t.TempDir(),
		"HTTP_PROXY="+nowhere, "HTTPS_PROXY="+nowhere, "http_proxy="+nowhere, "https_proxy="+nowhere)
}

// writeJSONFile writes v to dir/name as JSON.
func writeJSONFile(t *testing.T, dir, name string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
}

// piAgent is pi-acp, the ACP adapter of the pi coding agent
// (@mariozechner/pi-coding-agent), which it starts as `pi --mode rpc`; pi's
// models.json names the fake model as an OpenAI-compatible provider, and
// PI_OFFLINE turns off its update checks and telemetry.
var piAgent = agentSpec{
	name: "pi-acp",
	pkg:  "pi-acp",
	command: func(t *testing.T, modelURL string) *exec.Cmd {
		node := requireAgents(t)
		piDir := filepath.Join(t.TempDir(), "pi-agent")
		writeJSONFile(t, piDir, "models.json", map[string]any{
			"providers": map[string]any{"fake": map[string]any{
				"baseUrl": modelURL + "/v1", "api": "openai-completions", "apiKey": "offline",
				"compat": map[string]any{"supportsDeveloperRole": false, "supportsReasoningEffort": false},
				"models": []any{map[string]any{"id": "fake-model"}},
			}},
		})
		writeJSONFile(t, piDir, "settings.json", map[string]any{
			"defaultProvider": "fake", "defaultModel": "fake-model", "enableInstallTelemetry": false,
		})
		cmd := exec.Command(node, filepath.Join(packagesDir, "node_modules", "pi-acp", "dist", "index.js"))
		cmd.Env = append(offlineEnv(t),
			"PI_CODING_AGENT_DIR="+piDir,
			"PI_ACP_PI_COMMAND="+filepath.Join(packagesDir, "node_modules", ".bin", "pi"),
			"PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1")
		return cmd
	},
}

// opencodeAgent is opencode's `opencode acp`, its Linux x64 binary run
// directly; its configuration names the fake model as an OpenAI-compatible
// provider (the provider's package is bundled in the binary), and
// OPENCODE_DISABLE_MODELS_FETCH keeps it from fetching its model catalogue.
var opencodeAgent = agentSpec{
	name: "opencode",
	pkg:  "opencode-ai",
	command: func(t *testing.T, modelURL string) *exec.Cmd {
		dir := t.TempDir()
		writeJSONFile(t, dir, "opencode.json", map[string]any{
			"provider": map[string]any{"fake": map[string]any{
				"npm": "@ai-sdk/openai-compatible", "name": "fake model server",
				"options": map[string]any{"baseURL": modelURL + "/v1", "apiKey": "offline"},
				"models":  map[string]any{"fake-model": map[string]any{"name": "fake-model"}},
			}},
			"model": "fake/fake-model", "autoupdate": false, "share": "disabled",
		})
		cmd := exec.Command(filepath.Join(packagesDir, "node_modules", "opencode-linux-x64", "bin", "opencode"), "acp")
		cmd.Env = append(offlineEnv(t), "OPENCODE_CONFIG="+filepath.Join(dir, "opencode.json"),
			"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1")
		return cmd
	},
}

// geminiAgent is Gemini CLI's `gemini --acp`, pointed at the fake model by
// GOOGLE_GEMINI_BASE_URL with an API key; its settings choose that key,
// turn off telemetry and the update check, and name one model: with none,
// a classifier call picks the model and wants JSON the fake does not give.
var geminiAgent = agentSpec{
	name: "gemini-cli",
	pkg:  "@google/gemini-cli",
	command: func(t *testing.T, modelURL string) *exec.Cmd {
		node := requireAgents(t)
		env := offlineEnv(t)
		home := strings.TrimPrefix(env[slices.IndexFunc(env, func(v string) bool { return strings.HasPrefix(v, "HOME=") })], "HOME=")
		writeJSONFile(t, filepath.Join(home, ".gemini"), "settings.json", map[string]any{
			"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
			"general":   map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
			"privacy":   map[string]any{"usageStatisticsEnabled": false},
			"telemetry": map[string]any{"enabled": false},
			"model":     map[string]any{"name": "gemini-2.5-flash"},
		})
		cmd := exec.Command(node, filepath.Join(packagesDir, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js"), "--acp")
		cmd.Env = append(env, "GOOGLE_GEMINI_BASE_URL="+modelURL, "GEMINI_API_KEY=offline")
		return cmd
	},
}

// acpcheck against Gemini CLI 0.61.0: its ACP SDK logs a line that is not
// JSON and leaves it unanswered; session/cancel ends the turn "cancelled"
// and closes its model request; $/cancel_request is ignored (v1 allows
// it); it exits when its stdin closes.
func TestAcpcheckGemini(t *testing.T) {
	checkOnSDKBefore2(t, geminiAgent, "session-close") // it does not advertise sessionCapabilities.close
}

// acpcheck against opencode 1.18.33: its ACP SDK leaves a line that is
// not JSON unanswered; session/cancel ends the turn "cancelled" at once and
// closes the turn's model request; $/cancel_request is ignored (v1 allows
// it); it exits when its stdin closes.
func TestAcpcheckOpencode(t *testing.T) {
	checkOnSDKBefore2(t, opencodeAgent) // it advertises sessionCapabilities.close, and a closed session's turn ends cancelled
}

// acpcheck against pi-acp 0.0.24 and pi 0.73.1: on the TypeScript SDK
// 0.12 it leaves a line that is not JSON unanswered; session/cancel ends
// the turn "cancelled" and closes its model request; $/cancel_request is
// ignored (v1 allows it); it exits when its stdin closes, pi with it.
func TestAcpcheckPi(t *testing.T) {
	checkOnSDKBefore2(t, piAgent, "session-close") // it does not advertise sessionCapabilities.close
}

// checkOnSDKBefore2 runs acpcheck against an agent that reads stdio with
// the TypeScript SDK's ndJsonStream before 2.x, and cancels as the
// protocol says: the line that is not JSON is left unanswered, and that
// is its only fault; $/cancel_request is ignored (v1 allows it), and
// session/cancel closes the turn's model request. notBrought names the
// rules the agent leaves not brought about besides cancel-request.
func checkOnSDKBefore2(t *testing.T, spec agentSpec, notBrought ...string) {
	t.Helper()
	code, rep, model := runAcpcheck(t, spec)
	assert.Equal(t, 0, code, "parse-error is recorded only: a client MUST NOT write a line that is not JSON")
	want := map[string]string{
		"parse-error":    "fail",
		"cancel-request": "not-brought-about",
	}
	for _, id := range notBrought {
		want[id] = "not-brought-about"
	}
	expectStatuses(t, rep, want)
	assertParseErrorUnanswered(t, rep)
	assertCancelReachedModel(t, model)
}

// assertCancelReachedModel checks that a cancelled turn closed its model
// request: the fake model saw a slow answer's request closed under it.
func assertCancelReachedModel(t *testing.T, model []modelRequest) {
	t.Helper()
	n := 0
	for _, r := range model {
		if r.Slow && r.Tools && r.Aborted {
			n++
		}
	}
	assert.Positive(t, n, "a cancelled turn's model request was closed by the agent: %+v", model)
}
