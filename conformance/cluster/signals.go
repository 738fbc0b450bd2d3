package cluster

import (
	"context"
	"fmt"
	"time"
)

// The signals an operator or the harness sends one node: SIGKILL, SIGTERM,
// SIGSTOP and SIGCONT, and a restart on the same data.

// Kill ends broker id with SIGKILL and waits until it is gone: a crash
// (its page cache survives, as the OS keeps it). Killing a broker that is
// down is not an error.
func (c *Cluster) Kill(id int) error {
	p, err := c.broker(id)
	if err != nil {
		return err
	}
	c.opts.Logf("kill broker %d", id)
	return p.kill()
}

// Terminate stops broker id as an operator does, with SIGTERM: a
// controlled shutdown (the controller moves its leaderships away), then
// every log flushed and the clean-shutdown marker written. It waits until
// the process is gone; one still up after grace (0: Options.StopGrace)
// is killed, and that is an error. Terminating a broker that is down is
// not an error.
func (c *Cluster) Terminate(id int, grace time.Duration) error {
	p, err := c.broker(id)
	if err != nil {
		return err
	}
	if grace <= 0 {
		grace = c.opts.StopGrace
	}
	c.opts.Logf("stop broker %d (SIGTERM)", id)
	if p.terminate(grace) != nil || p.killedAfterGrace() {
		return fmt.Errorf("broker %d did not stop within %v of SIGTERM: killed", id, grace)
	}
	return nil
}

// Restart starts broker id again with the same flags and data directory,
// killing it first if it is still up, and waits until it listens. It does
// not wait for the broker to rejoin the ISR; see WaitReady.
func (c *Cluster) Restart(ctx context.Context, id int) error {
	p, err := c.broker(id)
	if err != nil {
		return err
	}
	if err := p.kill(); err != nil {
		return err
	}
	c.opts.Logf("restart broker %d", id)
	return p.start(ctx, c.opts.StartTimeout)
}

// Pause stops broker id with SIGSTOP: it keeps its connections and state
// but does nothing until Resume.
func (c *Cluster) Pause(id int) error {
	p, err := c.broker(id)
	if err != nil {
		return err
	}
	c.opts.Logf("pause broker %d", id)
	return p.pause()
}

// Resume continues a paused broker (SIGCONT).
func (c *Cluster) Resume(id int) error {
	p, err := c.broker(id)
	if err != nil {
		return err
	}
	c.opts.Logf("resume broker %d", id)
	return p.resume()
}

// KillController ends the controller with SIGKILL.
func (c *Cluster) KillController() error {
	c.opts.Logf("kill controller")
	return c.controller.kill()
}

// RestartController starts the controller again (killing it first if it
// is up) on the same address and data directory.
func (c *Cluster) RestartController(ctx context.Context) error {
	if err := c.controller.kill(); err != nil {
		return err
	}
	c.opts.Logf("restart controller")
	return c.controller.start(ctx, c.opts.StartTimeout)
}
