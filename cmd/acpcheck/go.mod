module github.com/acpkit/acprpc/cmd/acpcheck

go 1.26.0

require (
	github.com/acpkit/acprpc v0.1.0
	github.com/acpkit/acprpc/remote v0.1.0
	github.com/chromedp/chromedp v0.23.1
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/chromedp/cdproto v0.160.1 // indirect
	github.com/coder/websocket v1.8.15 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/sourcegraph/jsonrpc2 v0.2.3 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
