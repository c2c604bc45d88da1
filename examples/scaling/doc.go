// Package scaling runs the recipe of docs/scaling.md: three replicas of
// examples/agent -listen behind HAProxy, configured by haproxy.cfg in this
// folder, driven over WebSocket and Streamable HTTP. It holds only that
// test; the configuration is the one the doc shows.
package scaling
