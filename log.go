package acprpc

import (
	"fmt"
	"log/slog"
	"strconv"
)

// logger is the connection's slog.Logger, also serving as the engine's
// Printf logger so nothing sourcegraph says escapes to stderr.
type logger struct{ *slog.Logger }

func (l logger) Printf(format string, v ...any) {
	l.Debug(fmt.Sprintf(format, v...))
}

// parseOwnID reads an ID that may be one this side issued: a positive
// integer.
func parseOwnID(raw []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil && n > 0
}
