module github.com/acpkit/acprpc

go 1.26.0

require github.com/sourcegraph/jsonrpc2 v0.2.3
