// Package wiretest is the test kit of acprpc: a test is a scripted
// conversation between a Conn and a peer, written as the bytes that cross
// the wire. This page is the whole of it.
//
// # The language
//
//	set up    Run, Transports, Streams, Transport, Connect, With, Context,
//	          NoLeak
//	speak     Peer (Request, Notify, Cancel, Respond, Send, SendRaw, ...),
//	          RequestLine, CancelLine
//	hear      Peer (Expect, ExpectResult, ExpectError, ExpectByID, Rest, ...),
//	          Msg (IsAnswerTo, IsCancelOf, IsRequestOf, ...), Parse
//	serve     Mux, Echo, Ping, Hold
//	record    Recorder (its Logger's Record), Ledger (Tally), Tap
//	two Conns Wire, NewWire, Side, Direction (AtoB, BtoA)
//	wait      Recv, Peer.Settle, Wire.Settle, Ledger.Await, Recorder's Next*
//	break     BreakingAfter, Transport.Capacity
//	script    Script, Step
//	others    PeerOf (over a transport of messages), RawPipe (a peer of
//	          another engine)
//
// # A conversation
//
// Every conversation runs over each Transport in turn, with Run (a test of
// the line framing over Streams only). Connect starts a Conn serving a
// handler and gives the test the Peer at the other end; the Peer writes
// lines, and reads back, one at a time, what the Conn wrote:
//
//	func TestPing(t *testing.T) {
//		wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
//			ctx := wiretest.Context(t) // ends after ten seconds
//			_, p := wiretest.Connect(t, tr, wiretest.Mux{"ping": wiretest.Ping}, nil)
//			p.Request("1", "ping", "")
//			p.ExpectResult(ctx, "1", `"pong"`)
//		})
//	}
//
// The test's cleanup closes the Conn, then the Peer; main_test.go's goleak
// check then proves nothing was left running (NoLeak checks one test).
//
// # The peer
//
// A Peer says things with Send (one line, newline added), SendRaw (bytes
// as they are: half a line, two lines at once) and the builders Request,
// Notify, Cancel, Respond and RespondError. It hears things with Expect and
// its narrower forms (ExpectResult, ExpectError, ExpectAnswer,
// ExpectRequest, ExpectNotification, ExpectN); each fails the test on the
// first line that is not what was expected, or when ctx ends. A Peer reads
// only while the test waits for a line, so a test that stops asking is a
// peer that stopped reading: that is how back-pressure is tested. Drain
// reads everything in the background; CloseWrite ends the Conn's input.
// Each line is a Msg: its members parsed, its ID as the wire spelled it,
// and Raw, the line itself; its Is methods match a kind of line, for a
// wait that takes a func(Msg) bool. RequestLine and CancelLine write what
// Request and Cancel send, for a test that needs the bytes; other lines a
// test writes as the JSON they are.
//
// A Transport opens either a byte stream, whose peer's end is an
// io.ReadWriteCloser, or a transport of messages, whose peer the kit reads
// as lines; the remote transports are Transports of the second kind.
// PeerOf is a Peer over any transport of messages (a dialled WebSocket),
// RawPipe a Peer facing another JSON-RPC engine over os.Pipes.
//
// # Handlers
//
// Mux maps methods to functions; Echo, Ping and Hold are the handlers
// conversations use most (Hold(nil) holds until its context ends). A
// Recorder wraps handlers and tells the test which started, in what order
// they returned, with what cause their contexts ended and how many are
// running; its Logger records what a Conn logs, one Record a line.
//
// # Two Conns
//
// When both sides are Conns, they are a Wire: NewWire joins them over
// os.Pipes with nothing between, or over any Transport through a Relay.
// Connect and NewWire take a With, whose zero value is the default: its
// Parent gives NewConn its context, and its Tapped stands a Tap between
// each Conn and its transport, which records what the Conn sends in a
// Ledger. The Ledger's Tally counts, per direction, lines by kind and what
// became of each ID's requests, answers and cancels, so "exactly one
// answer for every request" is checked the same way everywhere
// (Ledger.CheckExactlyOnce). Peer.Tap is the Tap of a Conn connected
// Tapped. A Tap cannot pass on the root package's unexported transport
// interfaces, so tapping stays a choice and a test of those connects
// untapped.
//
// # Waiting
//
// Nothing in a test sleeps. Recv waits for a channel, the Peer's Expect
// for a line, Ledger.Await for a count, Wire.Settle for both sides to have
// written everything and answered every request; Peer.Settle closes the
// Peer's Conn and waits for its handlers. The waits that take t fail the
// test when ctx ends first, the others return ctx's error; either way the
// failure shows every goroutine's stack. Wire.Settle's marks are the kit's
// own lines: a Ledger does not count them among the notifications.
package wiretest
