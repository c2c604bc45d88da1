package acprpc

// Transport carries whole JSON-RPC messages between a Conn and its peer: one
// message per Recv, one per Send. It knows nothing of JSON-RPC; the Conn
// validates, answers and routes what it receives, so every transport gets the
// same bad-input answers, IDs and limits.
//
// Three methods are optional. A transport with SetReadLimit(n int) has it
// called by NewConn with Options.MaxMessageSize; a transport with
// Flush() error has it called whenever the Conn's write queue runs dry, so
// that a burst of Sends can share one write.
//
// A transport whose Send queues a message for a writer of its own and
// returns before the message is on the network (an HTTP server holding it
// for the client's next read) can have
// SendNotification(msg []byte, written func(n, size int)) error: the Conn
// calls it instead of Send for its own notifications (Notify's), which
// stay counted against Options.MaxUnsentNotifications and
// MaxUnsentNotificationBytes until the transport calls written with them
// (n notifications of size bytes in all, each counted once, whenever it
// has handed them to the network), so that its queue is bounded by the
// Conn's limit and a client that stops reading holds Notify back. The
// transport may call written from any goroutine, with its own locks held:
// the Conn holds none of its own while it calls the transport. After
// Close, or a failed Send, it need not call it. Without the method, a
// message counts as written once Send returns, so a Send that queues
// beyond the network's own buffers escapes the bound.
//
// A Conn never overlaps two calls of Recv, nor two calls of Send and Flush,
// though successive calls may come from different goroutines; it may call
// Close from any goroutine at any time, more than once.
type Transport interface {
	// Recv returns the next message from the peer. The Conn keeps the slice,
	// so the transport must not reuse it. An error ends the connection (io.EOF
	// when the peer's input ended), except a *MessageTooLargeError: the
	// message was dropped, and the Conn answers it and reads on. The end of
	// input is taken for a peer that will send nothing more but may still
	// read, whose requests read before it are answered first
	// (Options.InputEndGrace); an error with a method PeerGone() bool that
	// returns true says the peer reads nothing more either (it has exited),
	// and the connection closes once the notifications read before are
	// handled, the requests in flight unanswered.
	Recv() ([]byte, error)

	// Send delivers one message to the peer. msg holds one JSON value with no
	// newline, and is only valid until Send returns. Send may buffer when
	// the transport has a Flush method.
	Send(msg []byte) error

	// Close ends both directions and makes a blocked Recv return. A Send
	// blocked on a peer that stopped reading should return too; if the
	// transport cannot promise that (a blocking file), the Conn still closes
	// without waiting for it.
	Close() error
}

// readLimiter, flusher and noteQueuer are the optional methods of a
// Transport.
type (
	readLimiter interface{ SetReadLimit(n int) }
	flusher     interface{ Flush() error }
	noteQueuer  interface {
		SendNotification(msg []byte, written func(n, size int)) error
	}
)

// inputProber is a transport that can tell whether the peer has written
// what no Recv has read yet.
type inputProber interface {
	inputWaiting() bool
}

// trySender is a transport that can send without waiting for the peer.
type trySender interface {
	// canTrySend reports whether trySend can write without waiting.
	canTrySend() bool
	// trySend is Send followed by as much of a Flush as the peer takes at
	// once; it reports whether bytes are left for Flush.
	trySend(msg []byte) (unflushed bool, err error)
}

// interruptor is a transport that can tell whether its Close ends a Recv or
// Send in progress. One that cannot (a Stream over a blocking file) is not
// waited for when the Conn closes; a transport without the method is.
type interruptor interface{ interruptible() bool }

// threadHolder is a transport that can tell whether its next Recv would
// wait in a system call holding its thread.
type threadHolder interface{ recvHoldsThread() bool }
