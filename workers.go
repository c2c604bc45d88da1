package acprpc

import (
	"context"
	"sync/atomic"
	"time"
)

// workerPool runs request handlers, and the notification loop whenever it
// has notifications to handle. It bounds how many request handlers run at
// once when Options.MaxConcurrentRequests is set, and keeps goroutines
// between jobs: a new goroutine starts with a small stack, which the
// runtime copies each time a handler outgrows it (decoding JSON does); a
// reused one has grown already.
type workerPool struct {
	slots   chan struct{} // bounds running request handlers when set
	take    chan job      // unbuffered: a send succeeds only if one waits
	closed  <-chan struct{}
	waiting atomic.Int32
	idleFor time.Duration // how long a worker waits for the next job
}

// A job is what a worker runs: a request's handler (*inRequest) or the
// notification loop (*notifier). Both are pointers, so handing one to a
// worker allocates nothing.
type job interface{ runOn(p *workerPool) }

func (r *inRequest) runOn(p *workerPool) { p.run(r) }

func (n *notifier) runOn(*workerPool) { n.run() }

// maxIdleWorkers bounds the goroutines a connection keeps waiting.
const maxIdleWorkers = 16

// init readies the pool of a connection that closes with closed.
func (p *workerPool) init(maxConcurrent int, closed <-chan struct{}) {
	p.take = make(chan job)
	p.closed = closed
	p.idleFor = workerIdleTimeout
	if maxConcurrent > 0 {
		p.slots = make(chan struct{}, maxConcurrent)
	}
}

// start runs j on a goroutine of its own: an idle worker if one waits,
// else a new one.
func (p *workerPool) start(j job) {
	select {
	case p.take <- j:
	default:
		go p.work(j)
	}
}

// work runs j, then, unless enough workers wait already, waits for another
// job until the connection closes or idleFor passes with none: a busy
// connection keeps its grown goroutines, an idle one holds none, which is
// what lets one process hold many idle connections.
func (p *workerPool) work(j job) {
	idle := time.NewTimer(p.idleFor)
	defer idle.Stop()
	for {
		j.runOn(p)
		if p.waiting.Add(1) > maxIdleWorkers {
			p.waiting.Add(-1)
			return
		}
		idle.Reset(p.idleFor)
		select {
		case j = <-p.take:
			p.waiting.Add(-1)
		case <-p.closed:
			p.waiting.Add(-1)
			return
		case <-idle.C:
			p.waiting.Add(-1)
			return
		}
	}
}

// workerIdleTimeout is how long a worker waits for the next job of its
// connection before it ends.
var workerIdleTimeout = time.Second

// run waits for a slot if there is a bound, calls the handler and answers
// with what it returns.
func (p *workerPool) run(r *inRequest) {
	c := r.conn
	if p.slots != nil {
		select {
		case p.slots <- struct{}{}:
			defer func() { <-p.slots }()
		case <-r.Done():
			c.finish(r, nil, context.Cause(r))
			return
		}
	}
	result, err := c.invoke(r.handlerCtx, &r.req)
	c.finish(r, result, err)
}
