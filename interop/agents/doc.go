// Package agents holds acprpc's interoperability tests against two real ACP
// agents, pinned in package.json and package-lock.json here:
// @zed-industries/codex-acp (Codex, a Rust binary on the official Rust ACP
// crate) and @zed-industries/claude-agent-acp (Claude Code, TypeScript on
// the ACP SDK, which starts the Claude Code CLI). Each runs offline against
// a fake model server on loopback, written here: the OpenAI Responses API for
// Codex and the Anthropic Messages API for Claude Code.
//
// acpcheck is also run here against two agents that need no model: one
// written on the TypeScript SDK the way its docs suggest (../src/docs-agent.ts,
// on the SDK that ../package-lock.json pins) and the example agent of
// github.com/coder/acp-go-sdk, built at the version testdata/coderagent pins.
//
// `bash scripts/test.sh` at the repository's root installs the agents
// (npm, from this directory's lock file) before it runs the tests. Missing
// agents fail the tests, unless ACPRPC_SKIP_INTEROP=1 asks to skip them
// (never under CI). See docs/interop.md.
package agents
