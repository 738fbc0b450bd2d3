package node

import (
	"sync"
	"time"
)

// life is what every node process shares: a start time for its clock, a
// stop that happens once with its reason, and a done signal once the
// loop has wound down.
type life struct {
	start    time.Time
	stop     chan struct{}
	done     chan struct{}
	err      error // why it stopped; set before stop closes
	stopOnce sync.Once
}

func newLife() life {
	return life{start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
}

// Done is closed when the node has stopped; Err says why.
func (l *life) Done() <-chan struct{} { return l.done }

// Err is why the node stopped: ErrClosed after Close; for a broker, a
// *broker.FailpointError when a failpoint crashed it or cut its power.
func (l *life) Err() error {
	select {
	case <-l.done:
		return l.err
	default:
		return nil
	}
}

// Close stops the node the way a crash would: nothing is flushed or synced
// on the way out.
func (l *life) Close() error {
	l.halt(ErrClosed)
	<-l.done
	return nil
}

func (l *life) halt(err error) {
	l.stopOnce.Do(func() {
		l.err = err
		close(l.stop)
	})
}

// now is the node's clock in milliseconds, from 1.
func (l *life) now() int64 { return time.Since(l.start).Milliseconds() + 1 }
