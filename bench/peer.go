package bench

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sort"
	"sync"
)

// Peer is one JSON-RPC implementation under test.
type Peer interface {
	// Name is the short name used in benchmark names and tables.
	Name() string
	// Cancel tells how the peer turns a cancelled caller context into a
	// cancelled handler context on the other side.
	Cancel() CancelSupport
	// Serve starts the agent side: it reads requests from r, writes
	// answers and notifications to w, and runs wl for session/prompt.
	Serve(r io.Reader, w io.Writer, wl *Workload) Server
	// Dial starts the client side: it writes requests to w, reads from r,
	// and counts incoming session/update notifications in updates.
	Dial(r io.Reader, w io.Writer, updates *Counter) Client
}

// CancelSupport describes a peer's cancellation.
type CancelSupport string

const (
	// CancelNone: the peer cannot cancel a handler on the other side.
	CancelNone CancelSupport = "none"
	// CancelBuiltIn: the peer sends and honours ACP cancellation itself.
	CancelBuiltIn CancelSupport = "built-in"
	// CancelAdapter: the peer has the pieces ($/cancel_request is sent and
	// honoured by code in its adapter here, written against its public API).
	CancelAdapter CancelSupport = "adapter"
)

// Server is a running agent side.
type Server interface {
	// Close stops the agent side. The caller closes the streams afterwards.
	Close() error
}

// Client is a running client side.
type Client interface {
	// Prompt sends session/prompt with one text block and waits for the
	// answer. When ctx is cancelled first, the peer's own cancellation runs
	// and Prompt returns an error (or the marker, if the peer waits for it).
	Prompt(ctx context.Context, sessionID, text string) (stopReason string, err error)
	// Close stops the client side. The caller closes the streams afterwards.
	Close() error
}

// SessionCanceller is a Client that sends session/cancel when told, for a
// peer whose cancelled Prompt sends only $/cancel_request. A peer whose
// cancelled Prompt sends session/cancel by itself (coder) does not need it.
type SessionCanceller interface {
	CancelSession(ctx context.Context, sessionID string) error
}

var (
	peersMu sync.Mutex
	peers   = map[string]Peer{}
)

func register(p Peer) {
	peersMu.Lock()
	defer peersMu.Unlock()
	peers[p.Name()] = p
}

// Peers returns every registered peer, sorted by name.
func Peers() []Peer {
	peersMu.Lock()
	defer peersMu.Unlock()
	out := make([]Peer, 0, len(peers))
	for _, p := range peers {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Lookup returns the peer with that name.
func Lookup(name string) (Peer, bool) {
	peersMu.Lock()
	defer peersMu.Unlock()
	p, ok := peers[name]
	return p, ok
}

// rwc joins a reader and a writer into an io.ReadWriteCloser whose Close
// closes both when they are closers.
type rwc struct {
	io.Reader
	io.Writer
}

func (s rwc) Close() error {
	var errs []error
	if c, ok := s.Reader.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	if c, ok := s.Writer.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Link is a client and a server of one peer joined by two os.Pipe pairs.
type Link struct {
	Server   Server
	Client   Client
	Workload *Workload
	Updates  *Counter
	files    []*os.File
}

// Options for NewLink.
type LinkOptions struct {
	// Tap, if set, sees every chunk the client side reads.
	Tap func([]byte)
	// ServerTap, if set, sees every chunk the agent side reads.
	ServerTap func([]byte)
	// AgentStdio makes the agent's ends blocking descriptors, like the
	// stdin and stdout of an agent the client spawned (on Linux; elsewhere
	// it has no effect).
	AgentStdio bool
}

// NewLink starts peer p over os.Pipe: the client writes to the agent's
// input pipe and reads from the agent's output pipe.
func NewLink(p Peer, wl *Workload, opt LinkOptions) (*Link, error) {
	pipe := func(agentReads bool) (*os.File, *os.File, error) {
		if opt.AgentStdio {
			return stdioPipe(agentReads)
		}
		return os.Pipe()
	}
	toAgentR, toAgentW, err := pipe(true)
	if err != nil {
		return nil, err
	}
	toClientR, toClientW, err := pipe(false)
	if err != nil {
		toAgentR.Close()
		toAgentW.Close()
		return nil, err
	}
	l := &Link{Workload: wl, Updates: new(Counter), files: []*os.File{toAgentR, toAgentW, toClientR, toClientW}}
	var agentIn io.Reader = toAgentR
	if opt.ServerTap != nil {
		agentIn = &TapReader{R: toAgentR, Tap: opt.ServerTap}
	}
	l.Server = p.Serve(agentIn, toClientW, wl)
	var clientIn io.Reader = toClientR
	if opt.Tap != nil {
		clientIn = &TapReader{R: toClientR, Tap: opt.Tap}
	}
	l.Client = p.Dial(clientIn, toAgentW, l.Updates)
	return l, nil
}

// Close closes both sides, then every pipe end.
func (l *Link) Close() error {
	errs := []error{l.Client.Close(), l.Server.Close()}
	for _, f := range l.files {
		if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// TapReader passes every chunk it reads to Tap.
type TapReader struct {
	R   io.Reader
	Tap func([]byte)
}

// Read reads from the wrapped reader and watches what passes.
func (t *TapReader) Read(p []byte) (int, error) {
	n, err := t.R.Read(p)
	if n > 0 {
		t.Tap(p[:n])
	}
	return n, err
}

// Close closes the underlying reader if it can.
func (t *TapReader) Close() error {
	if c, ok := t.R.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// MarkerWatch spots cancellation answers (the ACP marker or the -32800
// error) in a byte stream that may be split anywhere. One answer holds one
// marker, so it counts answers however many are in flight.
type MarkerWatch = PatternWatch

// NewMarkerWatch calls fn each time a cancellation answer goes by.
func NewMarkerWatch(fn func()) *MarkerWatch { return NewPatternWatch(fn, markerCancelled, markerCode) }

var (
	markerCancelled = []byte(`"cancelled"`)
	markerCode      = []byte(`-32800`)
)

// PatternWatch calls a function each time one of its patterns goes by in a
// byte stream that may be split anywhere.
type PatternWatch struct {
	mu       sync.Mutex
	carry    []byte
	keep     int // longer than any pattern
	patterns [][]byte
	fn       func()
}

// NewPatternWatch calls fn each time one of patterns goes by. Patterns must
// not overlap one another or themselves.
func NewPatternWatch(fn func(), patterns ...[]byte) *PatternWatch {
	w := &PatternWatch{patterns: patterns, fn: fn}
	for _, p := range patterns {
		w.keep = max(w.keep, len(p)-1)
	}
	return w
}

// Tap is a TapReader callback.
func (w *PatternWatch) Tap(p []byte) {
	w.mu.Lock()
	// Patterns wholly inside the carried tail were counted last time.
	old := w.count(w.carry)
	buf := append(w.carry, p...)
	hits := w.count(buf) - old
	tail := buf
	if len(buf) > w.keep {
		tail = buf[len(buf)-w.keep:]
	}
	w.carry = append(w.carry[:0], tail...)
	w.mu.Unlock()
	for i := 0; i < hits; i++ {
		w.fn()
	}
}

func (w *PatternWatch) count(b []byte) int {
	n := 0
	for _, p := range w.patterns {
		n += bytes.Count(b, p)
	}
	return n
}
