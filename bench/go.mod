module github.com/acpkit/acprpc/bench

go 1.26.8

require (
	github.com/acpkit/acprpc v0.0.0
	github.com/coder/acp-go-sdk v0.13.0
	github.com/sourcegraph/jsonrpc2 v0.2.3
	go.lsp.dev/jsonrpc2 v1.0.1
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.50.0
)

require github.com/go-json-experiment/json v0.0.0-20260601182631-00ed12fed2a6 // indirect

replace github.com/acpkit/acprpc => ../
