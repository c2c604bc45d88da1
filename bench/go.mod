module github.com/acpkit/acprpc/bench

go 1.26.0

require (
	github.com/acpkit/acprpc v0.1.0
	github.com/acpkit/acprpc/remote v0.1.0
	github.com/coder/acp-go-sdk v0.13.5
	github.com/coder/websocket v1.8.15
	github.com/creachadair/jrpc2 v1.3.6
	github.com/sourcegraph/jsonrpc2 v0.2.3
	github.com/stretchr/testify v1.12.1
	go.lsp.dev/jsonrpc2 v1.0.1
	go.uber.org/goleak v1.3.0
	golang.org/x/exp/jsonrpc2 v0.0.0-20260709172345-9ea1abe57597
	golang.org/x/sys v0.50.0
)

require (
	github.com/creachadair/mds v0.31.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260601182631-00ed12fed2a6 // indirect
	golang.org/x/exp/event v0.0.0-20260611194520-c48552f49976 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/xerrors v0.0.0-20240903120638-7835f813f4da // indirect
)
