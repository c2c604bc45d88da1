// Package agents holds acprpc's interoperability tests against two real ACP
// agents, pinned in package.json and package-lock.json here:
// @zed-industries/codex-acp (Codex, a Rust binary on the official Rust ACP
// crate) and @zed-industries/claude-agent-acp (Claude Code, TypeScript on
// the ACP SDK, which starts the Claude Code CLI). Each runs offline against
// a fake model server on loopback, written here: the OpenAI Responses API for
// Codex and the Anthropic Messages API for Claude Code.
//
// `bash scripts/test.sh` at the repository's root installs the agents
// (npm, from this directory's lock file) before it runs the tests. Missing
// agents fail the tests, unless ACPRPC_SKIP_INTEROP=1 asks to skip them
// (never under CI). See docs/interop.md.
package agents
