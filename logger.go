package acprpc

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// loggerSwitch is the slog.Handler behind a Conn's logger: it hands each
// record to the handler in force, which SetLogger may change while the
// connection runs, so every goroutine of the connection logs through one
// *slog.Logger that never needs replacing.
type loggerSwitch struct {
	current atomic.Pointer[slog.Handler]
}

func newLoggerSwitch(l *slog.Logger) *loggerSwitch {
	s := &loggerSwitch{}
	s.set(l)
	return s
}

// set makes l the logger in force; nil is silent.
func (s *loggerSwitch) set(l *slog.Logger) {
	h := slog.DiscardHandler
	if l != nil {
		h = l.Handler()
	}
	s.current.Store(&h)
}

func (s *loggerSwitch) handler() slog.Handler { return *s.current.Load() }

func (s *loggerSwitch) Enabled(ctx context.Context, l slog.Level) bool {
	return s.handler().Enabled(ctx, l)
}

func (s *loggerSwitch) Handle(ctx context.Context, r slog.Record) error {
	return s.handler().Handle(ctx, r)
}

// WithAttrs and WithGroup derive from the handler in force: the Conn logs
// through the switch itself and derives nothing, so a derived logger that
// would not follow a later SetLogger is never made.
func (s *loggerSwitch) WithAttrs(attrs []slog.Attr) slog.Handler { return s.handler().WithAttrs(attrs) }
func (s *loggerSwitch) WithGroup(name string) slog.Handler       { return s.handler().WithGroup(name) }

// SetLogger makes l the logger of the connection's diagnostics from now on,
// in place of Options.Logger; nil makes it silent. It is safe to call at any
// time, from any goroutine, while the connection runs: an SDK that learns
// its logger after the Conn is made (or changes it) sets it here, and each
// record goes to the logger in force when it is logged.
func (c *Conn) SetLogger(l *slog.Logger) { c.logs.set(l) }
