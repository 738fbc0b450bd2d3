package broker

// follow is how a broker finds the active controller and stays with it
// through failovers (KRaft brokers follow the quorum's leader the same
// way: they send to the leader they know, and learn a new one from a
// NOT_CONTROLLER answer or a newer epoch).
//
// Everything the broker sends the controller goes to ControllerID, which
// send resolves to the voter it follows. That voter changes when:
//   - a controller with an epoch at least as new answers it: the broker
//     follows the sender;
//   - a voter answers NotController: the broker follows the leader it
//     names, or the next voter when it names none;
//   - the voter followed has not answered for controllerSilenceMs: the
//     broker tries the next voter.
//
// And a controller older than the newest one the broker heard from is
// not heeded: its states and answers are dropped, so that a deposed
// controller that has not learned it yet cannot move the broker back.
type follow struct {
	voters  int
	current int    // the voter followed, 1-based
	epoch   uint64 // the newest controller epoch heard
	heard   int64  // when the voter followed last answered
}

func (f *follow) init(voters int, now int64) {
	f.voters = max(voters, 1)
	f.current = 1
	f.heard = now
}

// controller is the node the broker's controller requests go to.
func (b *Broker) controller() NodeID { return VoterNode(b.follow.current) }

// Controller is the voter the broker follows: where what it sends to
// ControllerID goes.
func (b *Broker) Controller() NodeID { return b.controller() }

// fromController reports whether a message from node from with the given
// controller epoch is heeded, and follows its sender if so.
func (b *Broker) fromController(from NodeID, epoch uint64) bool {
	f := &b.follow
	if epoch < f.epoch {
		return false // a deposed controller's
	}
	f.epoch = epoch
	if v := from.Voter(); v >= 1 && v <= f.voters {
		f.current = v
	}
	f.heard = b.now
	return true
}

// handleNotController follows the leader a voter names, or the next
// voter; the registration or heartbeat it refused goes there at once
// when a leader was named.
func (b *Broker) handleNotController(from NodeID, m NotController) {
	f := &b.follow
	if m.Epoch < f.epoch || from != b.controller() {
		return // stale, or not the voter the broker now follows
	}
	f.epoch = m.Epoch
	f.heard = b.now
	if v := m.Leader.Voter(); v >= 1 && v <= f.voters && v != f.current {
		f.current = v
		b.resendToController()
		return
	}
	f.next()
}

func (f *follow) next() { f.current = f.current%f.voters + 1 }

// controllerSilenceMs is how long a broker waits for its controller to
// answer before it tries the next voter: two heartbeat intervals.
func (b *Broker) controllerSilenceMs() int64 { return 2 * b.cfg.HeartbeatIntervalMs }

// checkController moves on to the next voter when the one followed has
// been silent too long.
func (b *Broker) checkController() {
	f := &b.follow
	if f.voters > 1 && b.now-f.heard >= b.controllerSilenceMs() {
		f.next()
		f.heard = b.now
		b.resendToController()
	}
}

// resendToController sends the registration, or the heartbeat, now.
func (b *Broker) resendToController() {
	if !b.registered {
		b.sendRegister()
	} else {
		b.sendHeartbeat()
	}
}
