package remote

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// A connection's SSE stream can be cut between the server and the client
// (a proxy that ends long responses, a network that changes) while the
// server still writes to it: what the server wrote into the cut connection
// and the client never read would be lost, and the client's GET that comes
// back would find the stream still held by the one the server has not yet
// seen fail. So the connection's stream numbers its events (the SSE "id:"
// field, counting from 1), keeps the last ones written, and a GET that
// carries Last-Event-ID resumes it: it takes the stream over from a GET
// that still holds it, and starts with the event after the last one the
// client read, those written since into the cut connection first. A client
// that does not send Last-Event-ID (the TypeScript SDK's, which ends its
// connection when that stream ends) gets the stream as before.

// errResumeLost is a GET resuming after an event that is no longer kept:
// what came between is lost, so the connection ends rather than go on
// without it.
var errResumeLost = errors.New("remote: the SSE stream cannot resume: the events after Last-Event-ID are no longer kept")

// errResumeAhead is a GET resuming after an event never sent.
var errResumeAhead = errors.New("remote: Last-Event-ID names an event the stream has not sent")

// resumption is what a resumable stream keeps for a GET that resumes it.
type resumption struct {
	on     bool     // the stream's events have IDs
	sentID uint64   // the ID of the last event written; the queue's first is sentID+1
	kept   [][]byte // the last events written, sentID's last, up to keepBytes of them
	bytes  int      // their size
}

// nextID is the ID of the next event to write, 0 on a stream without IDs.
func (r *resumption) nextID() uint64 {
	if !r.on {
		return 0
	}
	return r.sentID + 1
}

// written notes that msg, the next event, was written, and keeps it,
// dropping the oldest kept beyond limit bytes.
func (r *resumption) written(msg []byte, limit int) {
	if !r.on {
		return
	}
	r.sentID++
	r.kept = append(r.kept, msg)
	r.bytes += len(msg)
	drop := 0
	for r.bytes > limit && drop < len(r.kept) {
		r.bytes -= len(r.kept[drop])
		r.kept[drop] = nil
		drop++
	}
	r.kept = r.kept[drop:]
}

// keepBytes is how much a resumable stream keeps of what it wrote: a
// quarter of MaxQueuedBytes (8 MiB by default), more than a cut connection
// holds in its socket buffers.
func (h *httpConn) keepBytes() int { return h.srv.opts.MaxQueuedBytes / 4 }

// resumeAfter makes st go on after the event lastEventID names, wherever
// it is among those st knows of: the events kept after it, which the
// client did not read, go back at the head of the queue; the events queued
// up to it, which a GET cut while writing them did not note as written
// though the client read them, leave the queue as written. The kept
// events up to it stay kept, so that a GET that resumes after an older
// one (another GET of the client's, which had read less) still can. With
// no lastEventID, the stream goes on with what was never written. Called
// with h.mu held.
func (h *httpConn) resumeAfter(st *outStream, lastEventID string) error {
	r := &st.resume
	if lastEventID == "" {
		r.kept, r.bytes = nil, 0
		return nil
	}
	last, err := parseEventID(lastEventID)
	switch {
	case err != nil || last > r.sentID+uint64(len(st.queue)):
		return errResumeAhead
	case last < r.sentID-uint64(len(r.kept)):
		return errResumeLost
	}
	if r.sentID < last {
		h.written(st, int(last-r.sentID))
	}
	if n := int(r.sentID - last); n > 0 {
		back := r.kept[len(r.kept)-n:]
		again := make([]pending, 0, n+len(st.queue))
		for _, m := range back {
			h.queued += len(m)
			r.bytes -= len(m)
			again = append(again, pending{msg: m}) // history: the Conn counted it once already
		}
		st.queue = append(again, st.queue...)
		r.kept = r.kept[:len(r.kept)-n]
		r.sentID = last
	}
	return nil
}

// mayResume refuses, before a GET that resumes st takes it over from the
// GET that holds it, a lastEventID that could not name an event the client
// read: one that is not a number, or beyond those written and those being
// written (the queue's, which the holder notes as written only once its
// write returns, after the client may have read them). A GET so refused
// ends nothing. Called with h.mu held.
func (h *httpConn) mayResume(st *outStream, lastEventID string) error {
	last, err := parseEventID(lastEventID)
	if err != nil || last > st.resume.sentID+uint64(len(st.queue)) {
		return errResumeAhead
	}
	return nil
}

// parseEventID reads an event ID the server wrote: a decimal number, no
// sign.
func parseEventID(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }

// oust ends the GET that holds st, for one that resumes it, and waits until
// it has let go (its write cut short by a deadline in the past), at most
// closeWait, the connection's close, or ctx's end. It reports whether st is
// free. Called with h.mu held, which it releases while it waits.
func (h *httpConn) oust(ctx context.Context, st *outStream) bool {
	st.ousted = true
	if st.deadline != nil {
		st.deadline(longAgo)
	}
	if st.poke != nil {
		st.poke()
	}
	select {
	case st.wake <- struct{}{}:
	default:
	}
	released := st.released
	h.mu.Unlock()
	wait := time.NewTimer(closeWait)
	select {
	case <-released:
	case <-h.closed:
	case <-ctx.Done():
	case <-wait.C:
	}
	wait.Stop()
	h.mu.Lock()
	return !st.receiver
}

// isOusted reports whether the GET writing st must stop for one that
// resumes it.
func (h *httpConn) isOusted(st *outStream) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return st.ousted
}
