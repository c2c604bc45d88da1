package remote

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"time"

	"github.com/coder/websocket"

	"github.com/acpkit/acprpc"
)

// DialOptions configure Dial. The zero value (or a nil *DialOptions) is
// ready to use.
type DialOptions struct {
	// Header is sent with every HTTP request the transport makes: the
	// WebSocket upgrade, or each POST, GET and DELETE of Streamable HTTP.
	// Credentials go here, such as Authorization: Bearer.
	Header http.Header

	// HTTPClient makes the requests. Nil means a client of the transport's
	// own, with a cookie jar (servers may pin a connection to a replica by
	// cookie) and TLSConfig, whose idle connections close with the
	// transport.
	HTTPClient *http.Client

	// TLSConfig is the default client's TLS configuration for https and
	// wss URLs, for example to trust a server's self-signed certificate.
	TLSConfig *tls.Config

	// IdleTimeout, for WebSocket, bounds the server's silence: the client
	// pings four times per IdleTimeout, and disconnects when nothing, not
	// even a pong, comes back for that long. Zero means no pings.
	IdleTimeout time.Duration

	// MaxMessageSize bounds a message from the server until the Conn sets
	// its own limit. Zero means acprpc.DefaultMaxMessageSize.
	MaxMessageSize int

	// MaxSessions, for Streamable HTTP, bounds the session streams the
	// client reads (one GET each): a server whose answers name more
	// sessions fails the transport. Zero means DefaultMaxSessions.
	MaxSessions int
}

// Dial returns a transport to the ACP server at rawURL: ws:// and wss://
// speak WebSocket, http:// and https:// Streamable HTTP. Run a Conn over it
// with acprpc.NewConn.
//
// A WebSocket transport is connected when Dial returns. A Streamable HTTP
// transport connects with its first message, which must be initialize (as
// a Conn's first call is): the server's answer opens the connection.
func Dial(ctx context.Context, rawURL string, opts *DialOptions) (acprpc.Transport, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	var o DialOptions
	if opts != nil {
		o = *opts
	}
	switch u.Scheme {
	case "ws", "wss":
		return dialWebSocket(ctx, u.String(), o)
	case "http", "https":
		return dialHTTP(u.String(), o)
	}
	return nil, fmt.Errorf("remote: unsupported URL scheme %q (want ws, wss, http or https)", u.Scheme)
}

// httpClientOf returns the client to use, and the transport to close with
// it when it is the transport's own.
func httpClientOf(o DialOptions) (*http.Client, *http.Transport) {
	if o.HTTPClient != nil {
		return o.HTTPClient, nil
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = o.TLSConfig
	jar, _ := cookiejar.New(nil) // never fails without options
	return &http.Client{Transport: tr, Jar: jar}, tr
}

func dialWebSocket(ctx context.Context, u string, o DialOptions) (acprpc.Transport, error) {
	client, own := httpClientOf(o)
	t := prepareWS(wsConfig{maxMessage: o.MaxMessageSize, idleTimeout: o.IdleTimeout})
	var raw net.Conn // the socket, when the client is ours to watch
	if own != nil {
		t.onClose = own.CloseIdleConnections
		var d net.Dialer
		own.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			raw = c
			return c, err
		}
	}
	ws, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{
		HTTPClient:     client,
		HTTPHeader:     o.Header,
		OnPongReceived: t.pong,
	})
	if err != nil {
		if own != nil {
			own.CloseIdleConnections()
		}
		if resp != nil {
			return nil, fmt.Errorf("remote: websocket dial %s: %s: %w", u, resp.Status, err)
		}
		return nil, fmt.Errorf("remote: websocket dial %s: %w", u, err)
	}
	t.attach(ws, raw)
	return t, nil
}
