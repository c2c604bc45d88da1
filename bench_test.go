package acprpc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/acpkit/acprpc"
)

// The benchmarks run two connections in one process over os.Pipe, so every
// message crosses the kernel as it would between an ACP client and its
// agent. Sub-benchmarks named impl=... compare side by side with
// benchstat -col /impl; docs/benchmarks.md has the commands and figures.

type benchBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type benchPromptParams struct {
	SessionID string       `json:"sessionId"`
	Prompt    []benchBlock `json:"prompt"`
}

type benchPromptResult struct {
	StopReason string `json:"stopReason"`
}

// benchPrompt is the small request: a one-word prompt turn.
var benchPrompt = benchPromptParams{SessionID: "s1", Prompt: []benchBlock{{Type: "text", Text: "hello"}}}

// benchPipes returns the two ends of a duplex connection made of two
// os.Pipes: a's writes are b's reads and the other way round.
func benchPipes(b *testing.B) (aR, aW, bR, bW *os.File) {
	b.Helper()
	var err error
	if bR, aW, err = os.Pipe(); err != nil {
		b.Fatal(err)
	}
	if aR, bW, err = os.Pipe(); err != nil {
		b.Fatal(err)
	}
	return aR, aW, bR, bW
}

// benchACP connects a client Conn to a server Conn running h.
func benchACP(b *testing.B, h, clientH acprpc.Handler) (client *acprpc.Conn) {
	cR, cW, sR, sW := benchPipes(b)
	server := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(sR, sW), h, nil)
	client = acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(cR, cW), clientH, nil)
	b.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client
}

// benchPromptHandler answers session/prompt the way an agent with nothing
// to do would: it decodes the params and ends the turn.
func benchPromptHandler(_ context.Context, req *acprpc.Request) (any, error) {
	var p benchPromptParams
	if err := req.DecodeParams(&p); err != nil {
		return nil, err
	}
	return benchPromptResult{StopReason: "end_turn"}, nil
}

// benchRWC is a pair of pipe ends as one io.ReadWriteCloser.
type benchRWC struct {
	io.Reader
	io.Writer
	closers []io.Closer
}

func (p benchRWC) Close() error {
	for _, c := range p.closers {
		c.Close()
	}
	return nil
}

// sgHandler is the sourcegraph side's equivalent of benchPromptHandler,
// replying with conn.Reply on the read goroutine.
type sgHandler struct{}

func (sgHandler) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if req.Notif {
		return
	}
	var p benchPromptParams
	if req.Params != nil {
		if err := json.Unmarshal(*req.Params, &p); err != nil {
			_ = conn.ReplyWithError(ctx, req.ID, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: err.Error()})
			return
		}
	}
	_ = conn.Reply(ctx, req.ID, benchPromptResult{StopReason: "end_turn"})
}

// benchSourcegraph connects two raw sourcegraph Conns, each with its own
// NewPlainObjectStream.
func benchSourcegraph(b *testing.B) (client *jsonrpc2.Conn) {
	cR, cW, sR, sW := benchPipes(b)
	ctx := context.Background()
	server := jsonrpc2.NewConn(ctx, jsonrpc2.NewPlainObjectStream(benchRWC{sR, sW, []io.Closer{sR, sW}}), sgHandler{})
	client = jsonrpc2.NewConn(ctx, jsonrpc2.NewPlainObjectStream(benchRWC{cR, cW, []io.Closer{cR, cW}}), sgHandler{})
	b.Cleanup(func() {
		client.Close()
		server.Close()
		<-client.DisconnectNotify()
		<-server.DisconnectNotify()
	})
	return client
}

// benchCPUTime is the CPU time, user and system, all threads, that this
// process has used, read from /proc/self/stat; -1 where there is none. On a
// shared machine it tracks a benchmark's own cost better than the clock.
func benchCPUTime() time.Duration {
	stat, err := os.ReadFile("/proc/self/stat")
	if i := bytes.LastIndexByte(stat, ')'); err == nil && i > 0 {
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 12 {
			utime, err1 := strconv.ParseInt(f[11], 10, 64)
			stime, err2 := strconv.ParseInt(f[12], 10, 64)
			if err1 == nil && err2 == nil {
				return time.Duration(utime+stime) * (time.Second / 100) // USER_HZ
			}
		}
	}
	return -1
}

// benchLoop resets the timer, runs body, and reports the CPU time per op
// next to the clock's.
func benchLoop(b *testing.B, body func()) {
	b.ReportAllocs()
	b.ResetTimer()
	start := benchCPUTime()
	body()
	b.StopTimer()
	if end := benchCPUTime(); start >= 0 && end >= 0 {
		b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
	}
}

// benchCaller makes one call; each implementation provides one.
type benchCaller func(ctx context.Context, params, result any) error

func acprpcCaller(b *testing.B) benchCaller {
	c := benchACP(b, acprpc.HandlerFunc(benchPromptHandler), nil)
	return func(ctx context.Context, params, result any) error {
		return c.Call(ctx, "session/prompt", params, result)
	}
}

func sourcegraphCaller(b *testing.B) benchCaller {
	c := benchSourcegraph(b)
	return func(ctx context.Context, params, result any) error {
		return c.Call(ctx, "session/prompt", params, result)
	}
}

var benchImpls = []struct {
	name string
	dial func(*testing.B) benchCaller
}{
	{"acprpc", acprpcCaller},
	{"sourcegraph", sourcegraphCaller},
}

// BenchmarkRoundTrip is one session/prompt call and its answer, one at a
// time.
func BenchmarkRoundTrip(b *testing.B) {
	for _, impl := range benchImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			call := impl.dial(b)
			benchCheckPrompt(b, call)
			ctx := context.Background()
			benchLoop(b, func() {
				for range b.N {
					var res benchPromptResult
					if err := call(ctx, benchPrompt, &res); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkRoundTripParallel8 is the same call made by 8 callers at once on
// one connection.
func BenchmarkRoundTripParallel8(b *testing.B) {
	for _, impl := range benchImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			call := impl.dial(b)
			benchCheckPrompt(b, call)
			benchLoop(b, func() {
				benchParallel(b, 8, b.N, func() error {
					var res benchPromptResult
					return call(context.Background(), benchPrompt, &res)
				})
			})
		})
	}
}

// benchParallel shares total calls of f among n goroutines.
func benchParallel(b *testing.B, n, total int, f func() error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(total) {
				if err := f(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func benchCheckPrompt(b *testing.B, call benchCaller) {
	b.Helper()
	var res benchPromptResult
	if err := call(context.Background(), benchPrompt, &res); err != nil || res.StopReason != "end_turn" {
		b.Fatalf("got %+v, %v", res, err)
	}
}

// BenchmarkCancelRoundTrip is a call cancelled while its handler runs: the
// request, $/cancel_request, the handler's context ending and the -32800
// answer the caller waits for. The handler cancels the caller's context
// itself as soon as it starts, so nothing else is measured.
func BenchmarkCancelRoundTrip(b *testing.B) {
	cancels := make(chan context.CancelFunc, 1)
	h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		(<-cancels)()
		<-ctx.Done()
		return nil, context.Cause(ctx)
	})
	client := benchACP(b, h, nil)
	params := map[string]string{"sessionId": "s1", "terminalId": "t1"}
	benchLoop(b, func() {
		for range b.N {
			ctx, cancel := context.WithCancel(context.Background())
			cancels <- cancel
			err := client.Call(ctx, "terminal/wait_for_exit", params, nil, acprpc.WaitAfterCancel(10*time.Second))
			var rpcErr *acprpc.Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != acprpc.CodeRequestCancelled {
				b.Fatalf("want the -32800 answer, got %v", err)
			}
		}
	})
}

// BenchmarkNotifyManyStreams is a hundred turns streaming at once on one
// connection, each handler sending its session/updates while the queue of
// unsent notifications is at its bound: what the waiting Notify calls cost
// the agent. ns/op is per notification.
func BenchmarkNotifyManyStreams(b *testing.B) {
	const streams = 100
	agent := acprpc.HandlerFunc(benchStreamTurn)
	client := benchACP(b, agent, acprpc.HandlerFunc(func(context.Context, *acprpc.Request) (any, error) { return nil, nil }))
	benchLoop(b, func() {
		var wg sync.WaitGroup
		for i := range streams {
			count := b.N / streams
			if i < b.N%streams {
				count++
			}
			wg.Go(func() {
				if err := client.Call(context.Background(), "x/stream", map[string]int{"count": count}, nil); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	})
}

// benchStreamTurn is a turn that sends the session/updates its params
// count ({"count":N}), then ends.
func benchStreamTurn(ctx context.Context, req *acprpc.Request) (any, error) {
	var p struct {
		Count int `json:"count"`
	}
	if err := req.DecodeParams(&p); err != nil {
		return nil, err
	}
	update := benchUpdateParams{SessionID: "s1", Update: benchUpdate{SessionUpdate: "agent_message_chunk",
		Content: benchBlock{Type: "text", Text: "hello"}}}
	conn := acprpc.ConnFromContext(ctx)
	for range p.Count {
		if err := conn.Notify(ctx, "session/update", update); err != nil {
			return nil, err
		}
	}
	return benchPromptResult{StopReason: "end_turn"}, nil
}

type benchUpdateParams struct {
	SessionID string      `json:"sessionId"`
	Update    benchUpdate `json:"update"`
}

type benchUpdate struct {
	SessionUpdate string     `json:"sessionUpdate"`
	Content       benchBlock `json:"content"`
}

// BenchmarkNotifyFlood is the agent streaming session/update notifications
// during a prompt turn; the prompt's answer waits for all of them to be
// handled. ns/op is per notification.
func BenchmarkNotifyFlood(b *testing.B) {
	const perTurn = 1000
	agent := acprpc.HandlerFunc(benchStreamTurn)
	var handled atomic.Int64
	clientH := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		handled.Add(1)
		return nil, nil
	})
	client := benchACP(b, agent, clientH)
	benchLoop(b, func() {
		for sent := 0; sent < b.N; {
			n := min(perTurn, b.N-sent)
			params := map[string]any{"sessionId": "s1", "count": n}
			if err := client.Call(context.Background(), "session/prompt", params, nil); err != nil {
				b.Fatal(err)
			}
			sent += n
			if got := handled.Load(); got != int64(sent) {
				b.Fatalf("the answer came with %d of %d notifications handled", got, sent)
			}
		}
	})
}

// benchBigParams is session/prompt params of about 1 MiB, encoded.
func benchBigParams() json.RawMessage {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", (1<<20)/45)
	p, err := json.Marshal(benchPromptParams{SessionID: "s1", Prompt: []benchBlock{{Type: "text", Text: text}}})
	if err != nil {
		panic(err)
	}
	return p
}

// BenchmarkParams1MiB is a call whose params are 1 MiB, left undecoded by
// the handler, so the figure is the library's: framing, validating and
// carrying the line. impl=jsonValid is one json.Valid over the same
// request line, the reference for "a pass".
func BenchmarkParams1MiB(b *testing.B) {
	params := benchBigParams()
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":` + string(params) + "}")
	skip := func(_ context.Context, req *acprpc.Request) (any, error) {
		if len(req.Params) != len(params) {
			return nil, errors.New("params cut")
		}
		return benchPromptResult{StopReason: "end_turn"}, nil
	}
	calls := map[string]func(*testing.B) benchCaller{
		"acprpc": func(b *testing.B) benchCaller {
			c := benchACP(b, acprpc.HandlerFunc(skip), nil)
			return func(ctx context.Context, p, r any) error { return c.Call(ctx, "session/prompt", p, r) }
		},
		"sourcegraph": sourcegraphCaller,
	}
	for _, name := range []string{"acprpc", "sourcegraph"} {
		b.Run("impl="+name, func(b *testing.B) {
			call := calls[name](b)
			b.SetBytes(int64(len(line)))
			benchLoop(b, func() {
				for range b.N {
					var res benchPromptResult
					if err := call(context.Background(), params, &res); err != nil || res.StopReason != "end_turn" {
						b.Fatalf("got %+v, %v", res, err)
					}
				}
			})
		})
	}
	b.Run("impl=jsonValid", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		benchLoop(b, func() {
			for range b.N {
				if !json.Valid(line) {
					b.Fatal("invalid")
				}
			}
		})
	})
}

// BenchmarkInFlightMemory holds 100,000 session/prompt requests in flight on
// a server Conn, every handler blocked on its context, and reports the
// memory the server holds for each: live heap and goroutine stacks, measured
// after a GC. The requests come as raw lines, so no client's memory is
// counted. Then one session/cancel ends them all and each is answered.
func BenchmarkInFlightMemory(b *testing.B) {
	const inFlight = 100_000
	input := benchPromptLines(inFlight)
	var heap, stack uint64
	b.ReportAllocs()
	for range b.N {
		h, s := benchHoldInFlight(b, input, inFlight)
		heap += h
		stack += s
	}
	perReq := func(total uint64) float64 { return float64(total) / float64(b.N) / inFlight }
	b.ReportMetric(perReq(heap+stack), "B/inflight")
	b.ReportMetric(perReq(heap), "heapB/inflight")
	b.ReportMetric(perReq(stack), "stackB/inflight")
}

// benchPromptLines is n session/prompt request lines of session s1.
func benchPromptLines(n int) []byte {
	var buf bytes.Buffer
	for i := range n {
		buf.WriteString(`{"jsonrpc":"2.0","id":`)
		buf.WriteString(strconv.Itoa(i + 1))
		buf.WriteString(`,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hello"}]}}` + "\n")
	}
	return buf.Bytes()
}

// benchHoldInFlight runs one round of BenchmarkInFlightMemory and returns
// the heap and stack bytes the server grew by with n requests in flight.
func benchHoldInFlight(b *testing.B, input []byte, n int) (heap, stack uint64) {
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	var started atomic.Int64
	allStarted := make(chan struct{})
	h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		if started.Add(1) == int64(n) {
			close(allStarted)
		}
		<-ctx.Done()
		return nil, context.Cause(ctx)
	})
	answered := make(chan int, 1)
	go func() { answered <- benchCountLines(outR, n) }()
	before := benchMem()
	server := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(inR, outW), h,
		&acprpc.Options{MaxInFlight: 2 * n})
	go func() { _, _ = inW.Write(input) }()
	<-allStarted
	after := benchMem()
	if got := server.Stats().IncomingInFlight; got != n {
		b.Fatalf("%d in flight, want %d", got, n)
	}
	if _, err := inW.Write([]byte(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}` + "\n")); err != nil {
		b.Fatal(err)
	}
	if got := <-answered; got != n {
		b.Fatalf("%d answers, want %d", got, n)
	}
	server.Close()
	inW.Close()
	outR.Close()
	return after.HeapAlloc - before.HeapAlloc, after.StackInuse - before.StackInuse
}

func benchMem() runtime.MemStats {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// benchCountLines reads r until n lines have come, or r ends, and returns how
// many came.
func benchCountLines(r io.Reader, n int) int {
	br := bufio.NewReaderSize(r, 64<<10)
	count := 0
	for count < n {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			count++
		}
		if err != nil && err != bufio.ErrBufferFull {
			break
		}
	}
	return count
}

// BenchmarkIdleConn is what a connection costs while it waits: 1,000 pairs
// of Conns over Pipe, each pair a client and a server, measured after a GC
// once every pair is open (state=fresh), has served a call and a
// notification each way (state=used), or has also served 8 calls at once
// (state=burst8), and gone quiet. It reports goroutines and bytes (live
// heap and goroutine stacks) per Conn; the benchmark's own are not counted.
func BenchmarkIdleConn(b *testing.B) {
	for _, state := range []string{"fresh", "used", "burst8"} {
		b.Run("state="+state, func(b *testing.B) {
			const pairs = 1000
			var goroutines, heap, stack float64
			b.ReportAllocs()
			for range b.N {
				g, h, s := benchIdlePairs(b, pairs, state)
				goroutines, heap, stack = goroutines+g, heap+h, stack+s
			}
			perConn := func(total float64) float64 { return total / float64(b.N) / (2 * pairs) }
			b.ReportMetric(perConn(goroutines), "goroutines/conn")
			b.ReportMetric(perConn(heap+stack), "B/conn")
			b.ReportMetric(perConn(heap), "heapB/conn")
			b.ReportMetric(perConn(stack), "stackB/conn")
		})
	}
}

// benchIdlePairs opens n pairs of Conns over Pipe, puts them in the
// BenchmarkIdleConn state, and returns the goroutines and the heap and stack
// bytes they hold once quiet.
func benchIdlePairs(b *testing.B, n int, state string) (goroutines, heap, stack float64) {
	var noted sync.WaitGroup
	onNote := func(ctx context.Context, req *acprpc.Request) (any, error) {
		if req.IsNotification() {
			noted.Done()
			return nil, nil
		}
		return benchPromptResult{StopReason: "end_turn"}, nil
	}
	runtime.GC()
	g0 := runtime.NumGoroutine()
	before := benchMem()
	conns := make([]*acprpc.Conn, 0, 2*n)
	for range n {
		a, s := acprpc.Pipe()
		server := acprpc.NewConn(context.Background(), s, acprpc.HandlerFunc(onNote), nil)
		client := acprpc.NewConn(context.Background(), a, acprpc.HandlerFunc(onNote), nil)
		conns = append(conns, server, client)
	}
	if state != "fresh" {
		ctx := context.Background()
		noted.Add(2 * n)
		for i := 0; i < len(conns); i += 2 {
			server, client := conns[i], conns[i+1]
			var res benchPromptResult
			if err := client.Call(ctx, "session/prompt", benchPrompt, &res); err != nil {
				b.Fatal(err)
			}
			if err := server.Call(ctx, "session/request_permission", nil, nil); err != nil {
				b.Fatal(err)
			}
			if err := client.Notify(ctx, "session/cancel", map[string]string{"sessionId": "s1"}); err != nil {
				b.Fatal(err)
			}
			if err := server.Notify(ctx, "session/update", map[string]string{"sessionId": "s1"}); err != nil {
				b.Fatal(err)
			}
			if state == "burst8" {
				benchParallel(b, 8, 8, func() error {
					var res benchPromptResult
					return client.Call(ctx, "session/prompt", benchPrompt, &res)
				})
			}
		}
		noted.Wait()
	}
	benchSettle()
	after := benchMem()
	goroutines = float64(runtime.NumGoroutine() - g0)
	heap, stack = float64(after.HeapAlloc)-float64(before.HeapAlloc), float64(after.StackInuse)-float64(before.StackInuse)
	for _, c := range conns {
		c.Close()
	}
	return goroutines, heap, stack
}

// benchSettle waits until the number of goroutines has not changed for
// one and a half seconds, a minute at most: a goroutine that has finished its
// work may be on its way out, and an idle handler goroutine leaves after a
// second without a request.
func benchSettle() {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	last, still := runtime.NumGoroutine(), 0
	for i := 0; i < 6000 && still < 150; i++ {
		<-tick.C
		if now := runtime.NumGoroutine(); now != last {
			last, still = now, 0
			continue
		}
		still++
	}
}

// The typed-decode benchmarks: what decoding a 1 MiB prompt costs, through
// the Router's typed handler and through a raw Handler, and what it adds to
// a whole round trip. docs/typed-methods.md has the figures and the choice
// of decoder they led to.

type decodeBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type decodePrompt struct {
	SessionID string        `json:"sessionId"`
	Prompt    []decodeBlock `json:"prompt"`
}

type decodeResult struct {
	StopReason string `json:"stopReason"`
}

// decodeTexts are two 1 MiB prompts: prose, whose string has nothing to
// unescape, and source code, whose newlines, tabs, quotes and non-ASCII
// letters are escaped on the wire, the decoder's slower path.
var decodeTexts = map[string]string{
	"prose": strings.Repeat("The quick brown fox jumps over the lazy dog. ", (1<<20)/45),
	"code":  strings.Repeat("func main() {\n\tfmt.Println(\"héllo, wörld\") // <tag> & \\path\n}\n", (1<<20)/64),
}

func decodeParams(b *testing.B, text string) json.RawMessage {
	b.Helper()
	p, err := json.Marshal(decodePrompt{SessionID: "s1", Prompt: []decodeBlock{{Type: "text", Text: text}}})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// decodeHandlers are the ways an agent serves the prompt: not decoding it
// (the library's own cost), a raw Handler calling DecodeParams, and the
// Router's typed handler.
func decodeHandlers(want int) map[string]acprpc.Handler {
	check := func(p decodePrompt) (decodeResult, error) {
		if len(p.Prompt) != 1 || len(p.Prompt[0].Text) != want {
			return decodeResult{}, errors.New("the prompt did not decode whole")
		}
		return decodeResult{StopReason: "end_turn"}, nil
	}
	router := acprpc.NewRouter()
	router.Register("session/prompt", acprpc.RequestHandler(func(_ context.Context, p decodePrompt) (decodeResult, error) {
		return check(p)
	}))
	return map[string]acprpc.Handler{
		"none": acprpc.HandlerFunc(func(context.Context, *acprpc.Request) (any, error) {
			return decodeResult{StopReason: "end_turn"}, nil
		}),
		"raw": acprpc.HandlerFunc(func(_ context.Context, req *acprpc.Request) (any, error) {
			var p decodePrompt
			if err := req.DecodeParams(&p); err != nil {
				return nil, err
			}
			return check(p)
		}),
		"router": router,
	}
}

var decodeOrder = []string{"none", "raw", "router"}

// BenchmarkDecode1MiB calls each handler directly with a 1 MiB
// session/prompt: the decode alone, no connection. MB/s is over the params.
func BenchmarkDecode1MiB(b *testing.B) {
	for _, textName := range []string{"prose", "code"} {
		text := decodeTexts[textName]
		params := decodeParams(b, text)
		handlers := decodeHandlers(len(text))
		for _, name := range decodeOrder {
			b.Run("text="+textName+"/handler="+name, func(b *testing.B) {
				req := &acprpc.Request{ID: acprpc.Int64ID(1), Method: "session/prompt", Params: params}
				h := handlers[name]
				b.SetBytes(int64(len(params)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := h.Handle(context.Background(), req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkPromptTurn1MiB is a whole session/prompt round trip with 1 MiB of
// params over os.Pipe, as between a client and its agent subprocess: the
// client encodes, the agent frames, validates and (or not) decodes, and
// answers.
func BenchmarkPromptTurn1MiB(b *testing.B) {
	for _, textName := range []string{"prose", "code"} {
		text := decodeTexts[textName]
		params := decodeParams(b, text)
		handlers := decodeHandlers(len(text))
		for _, name := range decodeOrder {
			b.Run("text="+textName+"/handler="+name, func(b *testing.B) {
				client := decodeConns(b, handlers[name])
				b.SetBytes(int64(len(params)))
				b.ReportAllocs()
				for b.Loop() {
					var res decodeResult
					if err := client.Call(context.Background(), "session/prompt", params, &res); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// decodeConns connects a client Conn to an agent Conn serving h, over two
// os.Pipes.
func decodeConns(b *testing.B, h acprpc.Handler) *acprpc.Conn {
	b.Helper()
	agentIn, clientOut, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	clientIn, agentOut, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	agent := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(agentIn, agentOut), h, nil)
	client := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(clientIn, clientOut), nil, nil)
	b.Cleanup(func() {
		client.Close()
		agent.Close()
	})
	return client
}

// A prompt turn and a cancelled one in ACP v1 and v2, side by side:
// benchstat -col /protocol. In v1 a turn is the prompt's call, whose answer
// carries the stop reason; in v2 the prompt is answered with its messageId
// and the turn ends with an idle state_update, which the client waits for.

// benchTurnConns connects a client to an agent serving h, both speaking
// version v.
func benchTurnConns(b *testing.B, v acprpc.ProtocolVersion, agent, client acprpc.Handler) *acprpc.Conn {
	cR, cW, sR, sW := benchPipes(b)
	opts := &acprpc.Options{PinnedVersion: v}
	server := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(sR, sW), agent, opts)
	c := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(cR, cW), client, opts)
	b.Cleanup(func() {
		c.Close()
		server.Close()
	})
	return c
}

var benchChunk = json.RawMessage(`{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"text","text":"hello"}}}`)

// benchIdleWatcher is a client handler that reports each idle state_update.
func benchIdleWatcher(idle chan<- string) acprpc.HandlerFunc {
	return func(_ context.Context, req *acprpc.Request) (any, error) {
		if req.Method == "session/update" {
			var p struct {
				Update struct{ State, StopReason string }
			}
			if err := req.DecodeParams(&p); err == nil && p.Update.State == "idle" {
				idle <- p.Update.StopReason
			}
		}
		return nil, nil
	}
}

// benchV2Agent inserts each prompt and runs work on a goroutine of its own:
// work(ctx) returns the stop reason.
func benchV2Agent(work func(ctx context.Context, c *acprpc.Conn) string) acprpc.HandlerFunc {
	return func(ctx context.Context, req *acprpc.Request) (any, error) {
		if req.IsNotification() {
			return nil, nil // session/cancel: the library has cancelled the work already
		}
		var p benchPromptParams
		if err := req.DecodeParams(&p); err != nil {
			return nil, err
		}
		w, _ := acprpc.WorkFromContext(ctx)
		c := acprpc.ConnFromContext(ctx)
		go func() { _ = w.End(work(w.Context(), c)) }()
		return json.RawMessage(`{"messageId":"m1"}`), nil
	}
}

// BenchmarkTurn is one prompt turn with one agent_message_chunk: in v1 the
// call and its answer; in v2 the call, its messageId answer, and the idle
// state_update.
func BenchmarkTurn(b *testing.B) {
	b.Run("protocol=v1", func(b *testing.B) {
		agent := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
			var p benchPromptParams
			if err := req.DecodeParams(&p); err != nil {
				return nil, err
			}
			_ = acprpc.ConnFromContext(ctx).Notify(ctx, "session/update", benchChunk)
			return benchPromptResult{StopReason: "end_turn"}, nil
		})
		client := benchTurnConns(b, acprpc.ProtocolV1, agent, acprpc.HandlerFunc(func(context.Context, *acprpc.Request) (any, error) { return nil, nil }))
		benchLoop(b, func() {
			for range b.N {
				var res benchPromptResult
				if err := client.Call(context.Background(), "session/prompt", benchPrompt, &res); err != nil || res.StopReason != "end_turn" {
					b.Fatal(res, err)
				}
			}
		})
	})
	b.Run("protocol=v2", func(b *testing.B) {
		agent := benchV2Agent(func(ctx context.Context, c *acprpc.Conn) string {
			_ = c.Notify(ctx, "session/update", benchChunk)
			return "end_turn"
		})
		idle := make(chan string, 1)
		client := benchTurnConns(b, acprpc.ProtocolV2, agent, benchIdleWatcher(idle))
		benchLoop(b, func() {
			for range b.N {
				var res struct{ MessageID string }
				if err := client.Call(context.Background(), "session/prompt", benchPrompt, &res); err != nil || res.MessageID == "" {
					b.Fatal(res, err)
				}
				if reason := <-idle; reason != "end_turn" {
					b.Fatal(reason)
				}
			}
		})
	})
}

// BenchmarkTurnCancel is a turn cancelled by session/cancel once it runs:
// in v1 the prompt, session/cancel, the handler's context ending and the
// {"stopReason":"cancelled"} answer; in v2 the prompt and its messageId,
// session/cancel, the work's context ending and its idle state_update.
func BenchmarkTurnCancel(b *testing.B) {
	b.Run("protocol=v1", func(b *testing.B) {
		started := make(chan struct{}, 1)
		agent := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
			if req.IsNotification() {
				return nil, nil
			}
			started <- struct{}{}
			<-ctx.Done()
			return nil, context.Cause(ctx)
		})
		client := benchTurnConns(b, acprpc.ProtocolV1, agent, nil)
		benchLoop(b, func() {
			for range b.N {
				done := make(chan error, 1)
				var res benchPromptResult
				go func() { done <- client.Call(context.Background(), "session/prompt", benchPrompt, &res) }()
				<-started
				if err := acprpc.CancelSession(context.Background(), client, "s1"); err != nil {
					b.Fatal(err)
				}
				if err := <-done; err != nil || res.StopReason != "cancelled" {
					b.Fatal(res, err)
				}
			}
		})
	})
	b.Run("protocol=v2", func(b *testing.B) {
		agent := benchV2Agent(func(ctx context.Context, _ *acprpc.Conn) string {
			<-ctx.Done()
			return "cancelled"
		})
		idle := make(chan string, 1)
		client := benchTurnConns(b, acprpc.ProtocolV2, agent, benchIdleWatcher(idle))
		benchLoop(b, func() {
			for range b.N {
				var res struct{ MessageID string }
				if err := client.Call(context.Background(), "session/prompt", benchPrompt, &res); err != nil {
					b.Fatal(err)
				}
				if err := acprpc.CancelSession(context.Background(), client, "s1"); err != nil {
					b.Fatal(err)
				}
				if reason := <-idle; reason != "cancelled" {
					b.Fatal(reason)
				}
			}
		})
	})
}
