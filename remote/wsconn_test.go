//go:build unix

package remote

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordingConn is the far side of a wsConn's writes: it keeps every byte
// and how many Writes brought them.
type recordingConn struct {
	net.Conn
	out    bytes.Buffer
	writes int
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.writes++
	return c.out.Write(p)
}

// frame returns a WebSocket frame with a payload of n bytes, masked or
// not, its length in the shortest form.
func frame(n int, masked bool) []byte {
	var f []byte
	f = append(f, 0x81) // FIN, text
	var maskBit byte
	if masked {
		maskBit = 0x80
	}
	switch {
	case n > 0xffff:
		f = append(f, maskBit|127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	case n > 125:
		f = append(f, maskBit|126)
		f = binary.BigEndian.AppendUint16(f, uint16(n))
	default:
		f = append(f, maskBit|byte(n))
	}
	if masked {
		f = append(f, 1, 2, 3, 4)
	}
	for i := range n {
		f = append(f, byte(i))
	}
	return f
}

// writeInPieces writes frames through w in pieces of the given sizes
// (cycled), and checks after each piece that the wsConn holds nothing once
// the stream is at a frame's end: a complete frame, a pong say, is never
// kept back waiting for more.
func writeInPieces(t *testing.T, w *wsConn, frames [][]byte, pieces []int) {
	t.Helper()
	var stream []byte
	ends := make(map[int]bool) // the stream's offsets where a frame ends
	for _, f := range frames {
		stream = append(stream, f...)
		ends[len(stream)] = true
	}
	for off, i := 0, 0; off < len(stream); i++ {
		n := min(max(pieces[i%len(pieces)], 1), len(stream)-off)
		k, err := w.Write(stream[off : off+n])
		if err != nil || k != n {
			t.Fatalf("Write of %d bytes: %d, %v", n, k, err)
		}
		off += n
		if ends[off] && w.npiece != 0 {
			t.Fatalf("a complete frame is held back at offset %d", off)
		}
		if w.npiece > heldMax {
			t.Fatalf("%d bytes held", w.npiece)
		}
	}
}

// TestWSConnWritesFramesWhole writes frames of every length form, as the
// small bufio.Writer in front of a wsConn passes them on (a 16-byte flush,
// then the rest) and in other pieces: the bytes arrive unchanged, nothing
// complete is held, and each frame the bufio.Writer passes in its usual
// two pieces leaves in one write to the socket (writev here being two
// Writes, a frame costs at most two).
func TestWSConnWritesFramesWhole(t *testing.T) {
	sizes := []int{0, 1, 13, 14, 15, 16, 17, 125, 126, 127, 4096, 0xffff, 0x10000, 300000}
	for _, masked := range []bool{false, true} {
		for _, pieces := range [][]int{{16, 1 << 30}, {1}, {2, 3, 5, 7}, {1 << 30}} {
			t.Run(fmt.Sprintf("masked=%v pieces=%v", masked, pieces), func(t *testing.T) {
				rec := &recordingConn{}
				w := &wsConn{Conn: rec}
				var frames [][]byte
				for _, n := range sizes {
					frames = append(frames, frame(n, masked))
				}
				writeInPieces(t, w, frames, pieces)
				assert.Equal(t, bytes.Join(frames, nil), rec.out.Bytes())
			})
		}
	}
}

// TestWSConnOneWritePerFrame writes each frame as coder/websocket does
// through a 16-byte bufio.Writer: a small frame reaches the socket in one
// Write, a larger one in one writev (two Writes on this recording conn).
func TestWSConnOneWritePerFrame(t *testing.T) {
	for _, n := range []int{0, 10, 14, 200, 70000} {
		rec := &recordingConn{}
		w := &wsConn{Conn: rec}
		f := frame(n, false)
		writeInPieces(t, w, [][]byte{f}, []int{minBufio, 1 << 30})
		want := 1
		if len(f) > minBufio {
			want = 2 // held first piece and the rest, one writev on a socket
		}
		assert.Equal(t, want, rec.writes, "a frame of %d bytes", n)
	}
}

// FuzzWSConnWrites writes well-formed frames of the fuzzer's lengths in
// the fuzzer's pieces: the stream arrives unchanged and no complete frame
// is ever held.
func FuzzWSConnWrites(f *testing.F) {
	f.Add([]byte{0, 1, 125, 126}, []byte{16, 255}, false)
	f.Add([]byte{200, 3}, []byte{1, 2, 3}, true)
	f.Fuzz(func(t *testing.T, lengths, pieces []byte, masked bool) {
		if len(pieces) == 0 {
			pieces = []byte{16}
		}
		var frames [][]byte
		for i, l := range lengths {
			n := int(l)
			if i%3 == 2 {
				n *= 300 // some frames with a 16-bit length, a few with 64
			}
			frames = append(frames, frame(n, masked))
		}
		sizes := make([]int, len(pieces))
		for i, p := range pieces {
			sizes[i] = int(p)
		}
		rec := &recordingConn{}
		writeInPieces(t, &wsConn{Conn: rec}, frames, sizes)
		assert.Equal(t, bytes.Join(frames, nil), rec.out.Bytes())
	})
}

// TestWebSocketFrameBehindTheUpgradeIsRead sends the upgrade request and
// the first frame in one write, so net/http has read the frame with the
// request before the hijack: the server's transport still receives it
// first, then the next frame from the socket.
func TestWebSocketFrameBehindTheUpgradeIsRead(t *testing.T) {
	ts := startServer(t, nil)
	conn := rawConn(t, ts)
	maskedText := func(msg string) []byte {
		key := [4]byte{7, 1, 3, 9}
		f := []byte{0x81, 0x80 | byte(len(msg)), key[0], key[1], key[2], key[3]}
		for i := range len(msg) {
			f = append(f, msg[i]^key[i%4])
		}
		return f
	}
	upgrade := "GET " + DefaultPath + " HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
	_, err := conn.Write(append([]byte(upgrade), maskedText(initRequest)...))
	require.NoError(t, err)
	server := ts.next(t)
	assert.Equal(t, initRequest, recvMsg(t, server))
	second := `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`
	_, err = conn.Write(maskedText(second))
	require.NoError(t, err)
	assert.Equal(t, second, recvMsg(t, server))
	require.NoError(t, conn.Close()) // no close handshake to wait for
	require.NoError(t, server.Close())
}

// Frames written between hold and release leave together, in one write,
// in the order written, header pieces and all; a control frame (a pong)
// takes what was gathered before it out with it at once, so it is never
// held back; a batch that would pass batchMax goes out with the frame
// that fills it; and outside hold and release, each frame leaves on its
// own.
func TestWebSocketFramesWrittenBackToBackLeaveTogether(t *testing.T) {
	rec := &recordingConn{}
	w := &wsConn{Conn: rec}
	var all [][]byte
	write := func(f []byte, pieces ...int) {
		all = append(all, f)
		for _, n := range pieces {
			_, err := w.Write(f[:n])
			require.NoError(t, err)
			f = f[n:]
		}
		_, err := w.Write(f)
		require.NoError(t, err)
	}

	w.hold()
	for i := range 10 {
		write(frame(100+i, false), 2)
	}
	assert.Zero(t, rec.writes, "nothing leaves while held")
	require.NoError(t, w.release())
	assert.Equal(t, 1, rec.writes, "ten frames, one write")

	w.hold()
	write(frame(50, false), 1)
	pong := frame(4, false)
	pong[0] = 0x8a // FIN, pong
	write(pong)
	assert.Equal(t, 2, rec.writes, "a pong takes the batch out at once")
	require.NoError(t, w.release())
	assert.Equal(t, 2, rec.writes, "nothing was left")

	w.hold()
	write(frame(batchMax/2, false))
	write(frame(batchMax/2, false)) // over batchMax with the first: both leave
	assert.Greater(t, rec.writes, 2)
	before := rec.writes
	require.NoError(t, w.release())
	assert.Equal(t, before, rec.writes, "nothing was left")

	write(frame(10, false))
	assert.Equal(t, before+1, rec.writes, "not held: a frame leaves at once")
	assert.Equal(t, bytes.Join(all, nil), rec.out.Bytes(), "every byte, in order")
}

// The Transport's Flush is optional: a handler of the Server's that uses
// its transport itself (Send alone, as a raw agent does) has each message
// leave as it sends it. Back-to-back frames are gathered only once the
// transport has seen a Flush, the mark of a caller that flushes.
func TestWebSocketSendWithoutFlushLeaves(t *testing.T) {
	ts := startServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	client, err := Dial(ctx, ts.url("ws"), nil)
	require.NoError(t, err)
	defer client.Close()
	server := ts.next(t)
	defer server.Close()
	for i := range 3 {
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","method":"n","params":%d}`, i)
		require.NoError(t, server.Send([]byte(msg)))
		got := make(chan []byte, 1)
		go func() {
			b, _ := client.Recv()
			got <- b
		}()
		select {
		case b := <-got:
			assert.Equal(t, msg, string(b))
		case <-ctx.Done():
			client.Close() // ends the Recv
			<-got
			t.Fatalf("message %d, sent with no Flush, never left", i)
		}
	}
}
