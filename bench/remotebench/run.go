package remotebench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is one measurement of one server over one transport.
type Config struct {
	URL       string // the endpoint, "http://host:port/acp"
	Transport string // WebSocket or HTTP
	PID       int    // the server's process, whose resident memory is read

	Warmup   int           // turns on one connection before anything is timed
	Duration time.Duration // how long each turns-per-second phase runs
	Cancels  int           // cancels timed one at a time on one connection
	Conns    int           // connections open at once for the other figures
	Settle   time.Duration // the wait before each reading of resident memory
}

// Result holds one Run's figures.
type Result struct {
	Transport string `json:"transport"`
	Conns     int    `json:"conns"`

	TurnsPerSec1 float64 `json:"turnsPerSec1"` // one connection, turn after turn
	TurnsPerSecN float64 `json:"turnsPerSecN"` // Conns connections, each turn after turn
	// The server's CPU time per turn in those two phases (user and system,
	// every thread): its own cost, which other work on the machine does
	// not inflate as it does the clock. The generator's beside it.
	ServerCPUUs1 float64 `json:"serverCpuUs1"`
	ServerCPUUsN float64 `json:"serverCpuUsN"`
	ClientCPUUsN float64 `json:"clientCpuUsN"`
	// The time from session/cancel sent to the cancelled answer read, one
	// turn at a time.
	CancelP50Us float64 `json:"cancelP50Us"`
	CancelP99Us float64 `json:"cancelP99Us"`
	// The server's resident memory grown per connection, from before the
	// Conns connections opened: with each connection idle (initialized,
	// with a session), and with each holding a turn in flight.
	BaseRSSKiB     int64   `json:"baseRssKiB"`
	IdleKiBPerConn float64 `json:"idleKiBPerConn"`
	TurnKiBPerConn float64 `json:"turnKiBPerConn"`
	// With every connection's turn in flight, session/cancel sent on each
	// at once: the time from the first to the last cancelled answer read.
	CancelAllMs float64 `json:"cancelAllMs"`
	Error       string  `json:"error,omitempty"`
}

// Run takes every figure on the server at cfg.URL, in this order: after
// warm-up turns on a connection then closed, Conns connections opened
// (memory idle, grown from before they opened), a turn started on each
// (memory mid-turn), every turn cancelled at once, turns on all of them;
// once they are closed, turns on one connection and cancels on it. The
// memory is taken first, on a server that has served little else, so that
// what earlier phases left to collect weighs on neither runtime's figure.
func Run(ctx context.Context, cfg Config) (Result, error) {
	res := Result{Transport: cfg.Transport, Conns: cfg.Conns}
	hc := NewHTTPClient()
	defer hc.CloseIdleConnections()
	if err := warmUp(ctx, cfg, hc); err != nil {
		return res, fmt.Errorf("warm-up: %w", err)
	}
	if err := manyConnections(ctx, cfg, hc, &res); err != nil {
		return res, err
	}
	time.Sleep(cfg.Settle) // the closed connections' traces gone
	if err := oneConnection(ctx, cfg, hc, &res); err != nil {
		return res, fmt.Errorf("one connection: %w", err)
	}
	return res, nil
}

// warmUp runs cfg.Warmup turns on a connection of its own, then closes
// it.
func warmUp(ctx context.Context, cfg Config, hc *http.Client) error {
	c, err := Dial(ctx, cfg.Transport, cfg.URL, hc)
	if err != nil {
		return err
	}
	defer c.Close()
	for range cfg.Warmup {
		if err := c.Turn(ctx); err != nil {
			return err
		}
	}
	return nil
}

// manyConnections takes the figures of cfg.Conns connections open at
// once: the memory, the cancel of every turn at once, the turns per
// second.
func manyConnections(ctx context.Context, cfg Config, hc *http.Client, res *Result) error {
	hc.CloseIdleConnections()
	time.Sleep(cfg.Settle) // the warm-up's connection gone before the baseline
	var err error
	if res.BaseRSSKiB, err = residentKiB(cfg.PID); err != nil {
		return err
	}
	clients, err := openAll(ctx, cfg, hc)
	defer closeAll(clients)
	if err != nil {
		return fmt.Errorf("opening %d connections: %w", cfg.Conns, err)
	}
	if res.IdleKiBPerConn, err = growth(cfg, res.BaseRSSKiB); err != nil {
		return err
	}
	if res.CancelAllMs, err = cancelAll(ctx, cfg, clients, res); err != nil {
		return fmt.Errorf("cancelling every turn: %w", err)
	}
	tp, err := turnsPerSecond(ctx, cfg, clients)
	if err != nil {
		return fmt.Errorf("turns on %d connections: %w", cfg.Conns, err)
	}
	res.TurnsPerSecN, res.ServerCPUUsN, res.ClientCPUUsN = tp.perSecond, tp.serverCPUUs, tp.clientCPUUs
	return nil
}

// oneConnection takes the figures of a lone connection: turns per second,
// then the cancel latency.
func oneConnection(ctx context.Context, cfg Config, hc *http.Client, res *Result) error {
	c, err := Dial(ctx, cfg.Transport, cfg.URL, hc)
	if err != nil {
		return err
	}
	defer c.Close()
	for range cfg.Warmup / 5 { // the server is warm; this connection's own first turns
		if err := c.Turn(ctx); err != nil {
			return err
		}
	}
	var tp turnPhase
	if tp, err = turnsPerSecond(ctx, cfg, []*Client{c}); err != nil {
		return err
	}
	res.TurnsPerSec1, res.ServerCPUUs1 = tp.perSecond, tp.serverCPUUs
	lat := make([]time.Duration, 0, cfg.Cancels)
	for range cfg.Cancels {
		id, err := c.StartWait(ctx)
		if err != nil {
			return err
		}
		start := time.Now()
		if err := c.Cancel(ctx); err != nil {
			return err
		}
		if err := c.AwaitCancelled(id); err != nil {
			return err
		}
		lat = append(lat, time.Since(start))
	}
	res.CancelP50Us, res.CancelP99Us = micros(percentile(lat, 50)), micros(percentile(lat, 99))
	return nil
}

// turnPhase is what a turns-per-second phase measured.
type turnPhase struct {
	perSecond   float64
	serverCPUUs float64 // the server's CPU µs per turn
	clientCPUUs float64 // the generator's
}

// turnsPerSecond runs turns on every client at once for cfg.Duration.
func turnsPerSecond(ctx context.Context, cfg Config, clients []*Client) (turnPhase, error) {
	var turns atomic.Int64
	pid := strconv.Itoa(cfg.PID)
	server0, client0 := ProcessCPU(pid), ProcessCPU("self")
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	err := each(clients, func(_ int, c *Client) error {
		for time.Now().Before(deadline) {
			if err := c.Turn(ctx); err != nil {
				return err
			}
			turns.Add(1)
		}
		return nil
	})
	n := float64(turns.Load())
	perTurn := func(d time.Duration) float64 { return float64(d.Microseconds()) / n }
	return turnPhase{
		perSecond:   n / time.Since(start).Seconds(),
		serverCPUUs: perTurn(ProcessCPU(pid) - server0),
		clientCPUUs: perTurn(ProcessCPU("self") - client0),
	}, err
}

// openAll opens cfg.Conns connections, a few dozen at a time.
func openAll(ctx context.Context, cfg Config, hc *http.Client) ([]*Client, error) {
	clients := make([]*Client, cfg.Conns)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	gate := make(chan struct{}, 32)
	for i := range clients {
		gate <- struct{}{}
		wg.Go(func() {
			defer func() { <-gate }()
			c, err := Dial(ctx, cfg.Transport, cfg.URL, hc)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			clients[i] = c
		})
	}
	wg.Wait()
	opened := slices.DeleteFunc(clients, func(c *Client) bool { return c == nil })
	if len(errs) > 0 {
		return opened, fmt.Errorf("%d failed, the first: %w", len(errs), errs[0])
	}
	return opened, nil
}

func closeAll(clients []*Client) {
	_ = each(clients, func(_ int, c *Client) error { return c.Close() })
}

// cancelAll starts a waiting turn on every client, takes the memory
// figure mid-turn, then sends every session/cancel at once and returns the
// time until the last cancelled answer.
func cancelAll(ctx context.Context, cfg Config, clients []*Client, res *Result) (float64, error) {
	ids := make([]int64, len(clients))
	err := each(clients, func(i int, c *Client) (err error) {
		ids[i], err = c.StartWait(ctx)
		return err
	})
	if err != nil {
		return 0, err
	}
	if res.TurnKiBPerConn, err = growth(cfg, res.BaseRSSKiB); err != nil {
		return 0, err
	}
	fire := make(chan struct{})
	var last atomic.Int64 // nanoseconds from start
	var start time.Time
	var ready sync.WaitGroup
	ready.Add(len(clients))
	done := make(chan error, 1)
	go func() {
		done <- each(clients, func(i int, c *Client) error {
			ready.Done()
			<-fire
			if err := c.Cancel(ctx); err != nil {
				return err
			}
			if err := c.AwaitCancelled(ids[i]); err != nil {
				return err
			}
			t := int64(time.Since(start))
			for {
				l := last.Load()
				if t <= l || last.CompareAndSwap(l, t) {
					return nil
				}
			}
		})
	}()
	ready.Wait()
	start = time.Now()
	close(fire)
	if err := <-done; err != nil {
		return 0, err
	}
	return float64(last.Load()) / 1e6, nil
}

// each runs f on every client, each on a goroutine of its own, and returns
// the errors joined.
func each(clients []*Client, f func(i int, c *Client) error) error {
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() { errs[i] = f(i, c) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// growth returns the server's resident memory grown since base, per
// connection, after cfg.Settle.
func growth(cfg Config, base int64) (float64, error) {
	time.Sleep(cfg.Settle)
	rss, err := residentKiB(cfg.PID)
	return float64(rss-base) / float64(cfg.Conns), err
}

// residentKiB reads a process's resident set size (VmRSS) from /proc.
func residentKiB(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("remotebench: no VmRSS for process %d", pid)
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
