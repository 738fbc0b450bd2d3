package protocol

// The controller's side: liveness turns into ISR changes and elections.
// Each function works on a *Controller alone, so that enabled can try it on
// a copy to learn whether the action's election choice is allowed.

// fence declares id dead.
func (m Model) fence(c *Controller, id, elect int32) error {
	c.Alive &^= 1 << uint(id)
	return m.settleWith(c, elect, true)
}

// unfence declares id alive again (same process: it lost nothing).
func (m Model) unfence(c *Controller, id, elect int32) error {
	c.Alive |= 1 << uint(id)
	return m.settleWith(c, elect, true)
}

// register records a new incarnation of id. Since KIP-903 a restart counts
// as a death first: the broker may have lost unsynced records, so it leaves
// the ISR (unless it is the last member) and loses leadership, and then
// comes back alive, when it may lead a partition whose ISR it is the last
// member of. Before KIP-903 it kept its place.
func (m Model) register(c *Controller, id, inc, elect int32) error {
	c.Inc[id] = inc
	used := false
	if !m.Variant.KeepISROnRestart && has(c.Alive, id) {
		c.Alive &^= 1 << uint(id)
		var err error
		if used, err = m.settle(c, elect); err != nil {
			return err
		}
	}
	if has(c.Alive, id) {
		return m.noChoice(elect, used)
	}
	c.Alive |= 1 << uint(id)
	again, err := m.settle(c, elect)
	if err != nil {
		return err
	}
	return m.noChoice(elect, used || again)
}

func (m Model) settleWith(c *Controller, elect int32, _ bool) error {
	used, err := m.settle(c, elect)
	if err != nil {
		return err
	}
	return m.noChoice(elect, used)
}

// noChoice refuses an election choice made where no election was held, so
// that each outcome has exactly one action.
func (m Model) noChoice(elect int32, used bool) error {
	if !used && elect != None {
		return refuse("no election is due, yet the action elects %d", elect)
	}
	return nil
}

// settle brings the partition in line with liveness: dead members leave the
// ISR (all but one, if none is alive), and a partition without a live leader
// gets one from the live ISR, or, with unclean election, from any live
// replica, whose log then becomes the truth (ISR = itself). elect names the
// winner when there is a choice; used says an election took place.
func (m Model) settle(c *Controller, elect int32) (used bool, err error) {
	isr := c.ISR & c.Alive
	if isr == 0 {
		// Never an empty ISR: keep the leader, who holds every committed
		// record, or else the ISR as it stands, so that a clean election
		// can pick a member when it returns.
		isr = c.ISR
		if c.Leader != None && has(c.ISR, c.Leader) {
			isr = 1 << uint(c.Leader)
		}
	}
	c.ISR = isr
	if c.Leader != None && has(c.Alive, c.Leader) {
		return false, nil
	}
	cands := isr & c.Alive
	unclean := false
	if cands == 0 && m.Variant.Unclean {
		cands, unclean = c.Alive&(1<<uint(c.N)-1), true
	}
	if cands == 0 {
		if c.Leader != None {
			c.Leader = None
			c.Epoch++
		}
		return false, nil
	}
	if elect < 0 || elect >= c.N || !has(cands, elect) {
		return false, &needChoice{refusal{"the election must pick one of %s, not %d", []any{setString(cands), elect}}, cands}
	}
	c.Leader = elect
	c.Epoch++
	if unclean {
		c.ISR = 1 << uint(elect)
	}
	return true, nil
}

// electionEnabled tries a's controller side on a copy.
func (m Model) electionEnabled(s *State, a Action, restart bool) error {
	c := s.Ctrl
	if restart {
		return m.register(&c, a.R, s.Replicas[a.R].Inc+1, a.Elect)
	}
	if a.Kind == Fence {
		return m.fence(&c, a.R, a.Elect)
	}
	return m.unfence(&c, a.R, a.Elect)
}
