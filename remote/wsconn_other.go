//go:build !unix

package remote

import (
	"bufio"
	"net"
)

// shapeHijacked hands coder/websocket the hijacked connection as net/http
// made it: the shaping of wsconn.go reads the socket's descriptor directly,
// which only Unix systems offer this way.
func shapeHijacked(c net.Conn, brw *bufio.ReadWriter) (net.Conn, *bufio.ReadWriter, error) {
	return c, brw, nil
}
