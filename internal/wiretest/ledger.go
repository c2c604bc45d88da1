package wiretest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/acpkit/acprpc"
)

// Ledger is the record of what went over a connection's wire, in each
// direction: lines, requests, answers and notifications counted by kind,
// and, for every ID, how many times it was requested, answered and named by
// a $/cancel_request. Taps feed it, always before the line is passed on,
// so a line the far end has read is already in the ledger.
//
// The zero Ledger counts; with Keep set it also keeps every line, for Lines
// and AwaitLine. A Ledger is safe for concurrent use.
type Ledger struct {
	Keep bool

	mu      sync.Mutex
	tally   [2]Tally
	ids     [2]idTable // by the direction the requests went
	lines   [2][]Msg
	marks   [2]int  // Wire.Settle's marks, counted apart from the lines of the test
	changed changes // woken whenever a line is recorded
}

// Tally counts the lines that went one way, and tells what became of the
// requests among them, by ID (as JSON text). An answer to a request the
// ledger never saw, such as the peer's requests when only a Conn's output
// is tapped, counts as Stray.
type Tally struct {
	Lines         int            // every line recorded
	Requests      map[string]int // requests by method
	Owed          int            // lines that are no request, yet owe an answer (see Owe)
	Notifications map[string]int // notifications by method, cancels included, Wire.Settle's marks not
	Results       int            // success answers, markers included
	Markers       int            // success answers that are an ACP cancellation marker
	Errors        map[int64]int  // error answers by code
	NullAnswers   int            // answers with "id": null
	Problems      []string       // lines that are not one valid JSON-RPC message

	Requested   int      // distinct IDs requested
	Open        int      // requested and not answered yet
	Unanswered  []string // requested, never answered
	Duplicated  []string // answered more than once
	Stray       []string // answered, never requested
	Resent      []string // requested more than once
	Recancelled []string // named by more than one $/cancel_request
	Precancel   []string // named by a $/cancel_request before any request
	Cancelled   int      // IDs named by a $/cancel_request
}

// RequestCount is how many requests went this way, owed ones included.
func (t Tally) RequestCount() int { return sum(t.Requests) + t.Owed }

// Answers is how many answers went this way.
func (t Tally) Answers() int { return t.Results + sum(t.Errors) }

// ErrorAnswers is how many error answers went this way.
func (t Tally) ErrorAnswers() int { return sum(t.Errors) }

// idTable keeps the accounts of one direction's IDs: small non-negative
// integers (the Conns' own IDs) in a slice, any other ID in a map, so that a
// million requests cost a few megabytes.
type idTable struct {
	small     []account
	other     map[string]*account
	open      int
	precancel []string
}

type account struct{ requested, answered, cancelled uint8 }

const maxSmallID = 1 << 24

func (tb *idTable) get(id []byte) *account {
	if n, ok := smallID(id); ok {
		for len(tb.small) <= n {
			tb.small = append(tb.small, account{})
		}
		return &tb.small[n]
	}
	if tb.other == nil {
		tb.other = map[string]*account{}
	}
	a := tb.other[string(id)]
	if a == nil {
		a = &account{}
		tb.other[string(id)] = a
	}
	return a
}

// smallID parses a decimal ID without sign or leading zero below maxSmallID.
func smallID(id []byte) (int, bool) {
	if len(id) == 0 || len(id) > 8 || (id[0] == '0' && len(id) > 1) {
		return 0, false
	}
	n := 0
	for _, c := range id {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n < maxSmallID
}

// find returns id's account without creating one.
func (tb *idTable) find(id []byte) account {
	if n, ok := smallID(id); ok {
		if n < len(tb.small) {
			return tb.small[n]
		}
		return account{}
	}
	if a := tb.other[string(id)]; a != nil {
		return *a
	}
	return account{}
}

func inc(n *uint8) {
	if *n < 255 {
		*n++
	}
}

func (tb *idTable) request(id []byte) {
	a := tb.get(id)
	if a.requested == 0 && a.answered == 0 {
		tb.open++
	}
	inc(&a.requested)
}

func (tb *idTable) answer(id []byte) {
	a := tb.get(id)
	if a.answered == 0 && a.requested > 0 {
		tb.open--
	}
	inc(&a.answered)
}

func (tb *idTable) cancel(id []byte) {
	a := tb.get(id)
	if a.requested == 0 {
		tb.precancel = append(tb.precancel, string(id))
	}
	inc(&a.cancelled)
}

func (tb *idTable) each(f func(id string, a account)) {
	for n, a := range tb.small {
		if a != (account{}) {
			f(fmt.Sprint(n), a)
		}
	}
	for id, a := range tb.other {
		f(id, *a)
	}
}

// fill fills in c what became of the requests this table keeps.
func (tb *idTable) fill(c *Tally) {
	c.Open, c.Precancel = tb.open, append([]string(nil), tb.precancel...)
	tb.each(func(id string, a account) {
		if a.requested > 0 {
			c.Requested++
		}
		if a.cancelled > 0 {
			c.Cancelled++
		}
		switch {
		case a.requested > 0 && a.answered == 0:
			c.Unanswered = append(c.Unanswered, id)
		case a.requested == 0 && a.answered > 0:
			c.Stray = append(c.Stray, id)
		}
		if a.answered > 1 {
			c.Duplicated = append(c.Duplicated, id)
		}
		if a.requested > 1 {
			c.Resent = append(c.Resent, id)
		}
		if a.cancelled > 1 {
			c.Recancelled = append(c.Recancelled, id)
		}
	})
	for _, ids := range [][]string{c.Unanswered, c.Stray, c.Duplicated, c.Resent, c.Recancelled} {
		sort.Strings(ids)
	}
}

// Record adds one line that went the way d; a trailing "\n" is ignored.
func (l *Ledger) Record(d Direction, line []byte) {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	var s summary
	var m Msg
	var err error
	if l.Keep {
		m, err = Parse(string(line))
		s = summarize(m)
	} else {
		s, err = scan(line)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.tallyOf(d)
	t.Lines++
	if l.Keep {
		l.lines[d] = append(l.lines[d], m)
	}
	if err != nil {
		t.Problems = append(t.Problems, err.Error())
	} else {
		l.count(d, t, s)
	}
	l.wake()
}

func (l *Ledger) count(d Direction, t *Tally, s summary) {
	switch s.kind {
	case kindRequest:
		t.Requests[s.method]++
		l.ids[d].request(s.id)
	case kindNotification:
		if s.method == markMethod {
			l.marks[d]++
			return
		}
		t.Notifications[s.method]++
		if s.method == acprpc.MethodCancelRequest && s.cancelOf != nil {
			l.ids[d].cancel(s.cancelOf)
		}
	default:
		if s.kind == kindResult {
			t.Results++
			if isMarker(s.result) {
				t.Markers++
			}
		} else {
			t.Errors[s.code]++
		}
		if s.id == nil || string(s.id) == "null" {
			t.NullAnswers++
			return
		}
		l.ids[1-d].answer(s.id)
	}
}

// Owe records a request that went the way d as a line no parser reads as
// one (a bad line with an ID, say), which the far end must still answer.
func (l *Ledger) Owe(d Direction, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tallyOf(d).Owed++
	l.ids[d].request([]byte(id))
	l.wake()
}

func (l *Ledger) tallyOf(d Direction) *Tally {
	t := &l.tally[d]
	if t.Requests == nil {
		t.Requests, t.Notifications, t.Errors = map[string]int{}, map[string]int{}, map[int64]int{}
	}
	return t
}

func (l *Ledger) wake() { l.changed.wake() }

// changedCh returns a channel closed at the next line recorded.
func (l *Ledger) changedCh() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed.next()
}

// Tally returns the counts of the lines that went the way d, and what
// became of the requests among them: a copy, which walks every ID.
func (l *Ledger) Tally(d Direction) Tally {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := *l.tallyOf(d)
	t.Requests, t.Notifications, t.Errors = clone(t.Requests), clone(t.Notifications), clone(t.Errors)
	t.Problems = append([]string(nil), t.Problems...)
	l.ids[d].fill(&t)
	return t
}

// Answers returns how many answers went the way d: Tally(d).Answers()
// without the copy, for a wait's condition.
func (l *Ledger) Answers(d Direction) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tallyOf(d).Answers()
}

// Notifications returns how many notifications of method went the way d.
func (l *Ledger) Notifications(d Direction, method string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tallyOf(d).Notifications[method]
}

// marked returns how many of Wire.Settle's marks went the way d.
func (l *Ledger) marked(d Direction) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.marks[d]
}

// Answered returns how many answers went back for the request id (JSON
// text) that went the way d.
func (l *Ledger) Answered(d Direction, id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.ids[d].find([]byte(id)).answered)
}

// Open returns how many requests that went the way d have no answer yet.
func (l *Ledger) Open(d Direction) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ids[d].open
}

// Lines returns the lines that went the way d so far; only a Ledger with
// Keep set keeps them.
func (l *Ledger) Lines(d Direction) []Msg {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Msg(nil), l.lines[d]...)
}

// Await waits until cond holds, testing it again after each line recorded.
// If ctx ends first it returns ctx's error, with every goroutine's stack.
// cond may call the Ledger.
func (l *Ledger) Await(ctx context.Context, cond func() bool) error {
	for {
		changed := l.changedCh()
		if cond() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return stalled(ctx)
		}
	}
}

// AwaitAnswered waits until every request recorded, both ways, has an
// answer recorded.
func (l *Ledger) AwaitAnswered(ctx context.Context) error {
	return l.Await(ctx, func() bool { return l.Open(AtoB) == 0 && l.Open(BtoA) == 0 })
}

// AwaitLine waits for a kept line matching match that went the way d, and
// returns it; it fails the test if ctx ends first.
func (l *Ledger) AwaitLine(ctx context.Context, t testing.TB, d Direction, match func(Msg) bool) Msg {
	t.Helper()
	var found Msg
	err := l.Await(ctx, func() bool {
		for _, m := range l.Lines(d) {
			if match(m) {
				found = m
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("wiretest: no matching line %s: %v; lines: %v", d, err, l.Lines(d))
	}
	return found
}

// CheckNoDuplicates fails t if, either way, a line was not a valid message
// or an ID (null aside: it answers lines whose ID could not be read) was
// answered more than once.
func (l *Ledger) CheckNoDuplicates(t testing.TB) {
	t.Helper()
	for _, d := range []Direction{AtoB, BtoA} {
		tally := l.Tally(d)
		for _, p := range tally.Problems {
			t.Errorf("wiretest: %s: %s", d, p)
		}
		if dup := tally.Duplicated; len(dup) > 0 {
			t.Errorf("wiretest: requests that went %s answered more than once: %v", d, head(dup))
		}
	}
}

// CheckExactlyOnce fails t unless every request that went the way d was
// sent once and answered exactly once, and every answer back was to one of
// them.
func (l *Ledger) CheckExactlyOnce(t testing.TB, d Direction) {
	t.Helper()
	c := l.Tally(d)
	for _, f := range []struct {
		what string
		ids  []string
	}{
		{"never answered", c.Unanswered},
		{"answered more than once", c.Duplicated},
		{"answered but never requested", c.Stray},
		{"requested more than once", c.Resent},
	} {
		if len(f.ids) > 0 {
			t.Errorf("wiretest: %d requests that went %s %s: %v", len(f.ids), d, f.what, head(f.ids))
		}
	}
}

// head shortens a list of IDs for a failure message.
func head(ids []string) []string {
	if len(ids) > 10 {
		return append(ids[:10:10], fmt.Sprintf("... (%d in all)", len(ids)))
	}
	return ids
}

func sum[K comparable](m map[K]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func clone[K comparable](m map[K]int) map[K]int {
	out := make(map[K]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
