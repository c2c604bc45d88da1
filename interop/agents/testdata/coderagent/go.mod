// The example agent and client of coder's Go ACP SDK, at the version acpcheck is run
// against in interop/agents: a module of its own, outside the workspace, so
// that the benchmarks' pin of the same SDK stays as it is.
module acprpc.test/coderagent

go 1.26.0

require github.com/coder/acp-go-sdk v0.13.5
