package cluster

import (
	"fmt"
	"time"
)

// Cut cuts the links between brokers a and b in both directions: open
// connections close, new ones are closed as soon as they open, until Heal.
func (c *Cluster) Cut(a, b int) error {
	if err := c.needProxies(a, b); err != nil {
		return err
	}
	if a == b {
		return fmt.Errorf("cut %d from itself: name two different brokers", a)
	}
	c.opts.Logf("cut brokers %d and %d", a, b)
	c.links[[2]int{a, b}].SetCut(true)
	c.links[[2]int{b, a}].SetCut(true)
	return nil
}

// Isolate cuts broker id from every other broker, from the controller and
// from clients.
func (c *Cluster) Isolate(id int) error {
	if err := c.needProxies(id); err != nil {
		return err
	}
	c.opts.Logf("isolate broker %d", id)
	for _, px := range c.proxiesOf(id) {
		px.SetCut(true)
	}
	return nil
}

// Heal restores every link and removes every added latency.
func (c *Cluster) Heal() error {
	if !c.opts.Proxies {
		return ErrNoProxies
	}
	c.opts.Logf("heal the network")
	for _, px := range c.proxies() {
		px.SetCut(false)
		px.SetLatency(0)
	}
	return nil
}

// SetLatency delays every link of broker id (to its peers, the controller
// and clients, both ways) by d per chunk of data; 0 removes the delay.
func (c *Cluster) SetLatency(id int, d time.Duration) error {
	if err := c.needProxies(id); err != nil {
		return err
	}
	c.opts.Logf("latency %v on broker %d", d, id)
	for _, px := range c.proxiesOf(id) {
		px.SetLatency(d)
	}
	return nil
}

// SetPeerLatency delays broker id's links to the other brokers and the
// controller, not its clients' (what a slow fault of --target kafka asks
// of a cluster whose clients' links the harness slows itself).
func (c *Cluster) SetPeerLatency(id int, d time.Duration) error {
	if err := c.needProxies(id); err != nil {
		return err
	}
	c.opts.Logf("latency %v on broker %d's links to its peers", d, id)
	for _, px := range c.proxiesOf(id) {
		if px != c.clientProxy[id] {
			px.SetLatency(d)
		}
	}
	return nil
}

// proxiesOf is every proxy on a link of broker id.
func (c *Cluster) proxiesOf(id int) []*Proxy {
	out := []*Proxy{c.clientProxy[id], c.ctrlProxy[id]}
	for pair, px := range c.links {
		if pair[0] == id || pair[1] == id {
			out = append(out, px)
		}
	}
	return out
}

func (c *Cluster) needProxies(ids ...int) error {
	if !c.opts.Proxies {
		return ErrNoProxies
	}
	for _, id := range ids {
		if _, err := c.broker(id); err != nil {
			return err
		}
	}
	return nil
}
