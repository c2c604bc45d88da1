package acprpc

import (
	"fmt"
	"log/slog"
)

// logger is the connection's slog.Logger, also serving as the engine's
// Printf logger so nothing sourcegraph says escapes to stderr.
type logger struct{ *slog.Logger }

func (l logger) Printf(format string, v ...any) {
	l.Debug(fmt.Sprintf(format, v...))
}
