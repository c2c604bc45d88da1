package acprpc

import (
	"context"
	"sync/atomic"
	"time"
)

// workerPool runs request handlers. It bounds how many run at once when
// Options.MaxConcurrentRequests is set, and keeps goroutines between
// requests: a new goroutine starts with a small stack, which the runtime
// copies each time a handler outgrows it (decoding JSON does); a reused one
// has grown already.
type workerPool struct {
	slots   chan struct{}   // bounds running handlers when set
	take    chan *inRequest // unbuffered: a send succeeds only if one waits
	waiting atomic.Int32
	idleFor time.Duration // how long a worker waits for the next request
}

// maxIdleWorkers bounds the goroutines a connection keeps waiting.
const maxIdleWorkers = 16

func (p *workerPool) init(maxConcurrent int) {
	p.take = make(chan *inRequest)
	p.idleFor = workerIdleTimeout
	if maxConcurrent > 0 {
		p.slots = make(chan struct{}, maxConcurrent)
	}
}

// start runs r's handler on a goroutine of its own: an idle worker if one
// waits, else a new one.
func (p *workerPool) start(r *inRequest) {
	select {
	case p.take <- r:
	default:
		go p.work(r)
	}
}

// work runs r, then, unless enough workers wait already, waits for another
// request until the connection closes or idleFor passes with none:
// a busy connection keeps its grown goroutines, an idle one holds none, which
// is what lets one process hold many idle connections.
func (p *workerPool) work(r *inRequest) {
	closed := r.conn.closed
	idle := time.NewTimer(p.idleFor)
	defer idle.Stop()
	for {
		p.run(r)
		if p.waiting.Add(1) > maxIdleWorkers {
			p.waiting.Add(-1)
			return
		}
		idle.Reset(p.idleFor)
		select {
		case r = <-p.take:
			p.waiting.Add(-1)
		case <-closed:
			p.waiting.Add(-1)
			return
		case <-idle.C:
			p.waiting.Add(-1)
			return
		}
	}
}

// workerIdleTimeout is how long a worker waits for the next request of its
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
