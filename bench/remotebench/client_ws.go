package remotebench

import (
	"context"
	"fmt"
	"net/http"

	"github.com/coder/websocket"
)

// wsWire is a WebSocket connection: one text message per JSON-RPC message.
type wsWire struct{ ws *websocket.Conn }

func dialWebSocket(ctx context.Context, url string) (*wsWire, error) {
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: &http.Client{Transport: &http.Transport{DialContext: dialTCP}}})
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(-1)
	return &wsWire{ws}, nil
}

func (w *wsWire) send(ctx context.Context, msg []byte) error {
	return w.ws.Write(ctx, websocket.MessageText, msg)
}

func (w *wsWire) recv() ([]byte, error) {
	for {
		typ, msg, err := w.ws.Read(context.Background())
		if err != nil {
			return nil, fmt.Errorf("remotebench: websocket read: %w", err)
		}
		if typ == websocket.MessageText {
			return msg, nil
		}
	}
}

func (w *wsWire) opened(context.Context, string) error { return nil }

func (w *wsWire) close() error { return w.ws.Close(websocket.StatusNormalClosure, "") }
