package remote

import (
	"context"
	"sync"
	"time"
)

// timing is a timer armed around a wait: its action runs if the wait lasts
// longer than d. A nil *timing is a limit that is off.
type timing struct {
	d time.Duration
	t *time.Timer
}

func newTiming(d time.Duration, action func()) *timing {
	t := time.AfterFunc(d, action)
	t.Stop()
	return &timing{d: d, t: t}
}

// arm starts the wait, or starts it over.
func (x *timing) arm() {
	if x != nil {
		x.t.Reset(x.d)
	}
}

// restart starts the wait over: there was progress.
func (x *timing) restart() { x.arm() }

// disarm ends the wait.
func (x *timing) disarm() {
	if x != nil {
		x.t.Stop()
	}
}

// pinger calls ping every interval, on a timer rather than a goroutine of
// its own, so an idle connection costs no goroutine for it. A nil *pinger
// does nothing.
type pinger struct {
	every   time.Duration
	ping    func(ctx context.Context)
	mu      sync.Mutex
	cancel  context.CancelFunc // ends the ping in progress, if any
	timer   *time.Timer
	stopped bool
	running sync.WaitGroup
}

func newPinger(every time.Duration, ping func(ctx context.Context)) *pinger {
	// No context lives with the pinger: each ping makes its own, so an idle
	// connection holds none.
	return &pinger{every: every, ping: ping}
}

func (p *pinger) start() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped {
		p.timer = time.AfterFunc(p.every, p.tick)
	}
}

// tick pings once, with at most an interval to get it out, then sets the
// next one.
func (p *pinger) tick() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.running.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), p.every)
	p.cancel = cancel
	p.mu.Unlock()
	defer p.running.Done()

	p.ping(ctx)
	cancel()

	p.mu.Lock()
	p.cancel = nil
	if !p.stopped {
		p.timer.Reset(p.every)
	}
	p.mu.Unlock()
}

// stop ends the pings and waits for one in progress.
func (p *pinger) stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.stopped = true
	if p.timer != nil {
		p.timer.Stop()
	}
	if p.cancel != nil {
		p.cancel()
	}
	p.mu.Unlock()
	p.running.Wait()
}
