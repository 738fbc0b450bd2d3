package run

// Capabilities are the broker faults a target can carry out (conformance's
// Target.Capabilities); a fault's definition says which it needs
// (FaultDef.Needs, Spec.Needs). Faults on the client side (lost answers,
// crashed consumers, restarted producers) need none: the harness does
// them itself.
type Capabilities struct {
	Crash   bool // kill a broker and restart it on its data
	Pause   bool // stop a broker and let it go on (SIGSTOP/SIGCONT)
	Isolate bool // cut a broker off from the other brokers and the clients, and heal
	Slow    bool // add latency to a broker's links
	// ReplaceDisk: kill a broker, empty its data directory, and restart it.
	ReplaceDisk bool
	// Stop: stop a broker as an operator does (SIGTERM: a controlled
	// shutdown, a flush, a clean-shutdown marker) and restart it.
	Stop bool
	// PowerLoss: cut a machine's power, so that what its broker did not
	// sync is lost. Only the simulator can: its disks know what was
	// synced, and a process on a running machine cannot lose it.
	PowerLoss bool
	// Messages: drop, duplicate, reorder or hold back single messages of
	// one kind on a broker's links. Only the simulator can: a TCP proxy
	// cannot without breaking the connection.
	Messages bool
	// Failpoints: switch the reference broker's failpoints at exact
	// protocol steps, across brokers. Only the simulator can: it runs
	// every broker in one process and steps them one message at a time.
	Failpoints bool
	// Trace: the run exposes every replication step, for trace
	// validation (ValidateProtocol). Only the simulator does.
	Trace bool
}

// AllCapabilities is every capability: what the simulator offers.
var AllCapabilities = Capabilities{Crash: true, Pause: true, Isolate: true, Slow: true, ReplaceDisk: true, Stop: true,
	PowerLoss: true, Messages: true, Failpoints: true, Trace: true}

// capabilities are the fields of Capabilities, each with what a target
// lacking it cannot do and how one gets it.
var capabilities = []struct {
	field func(*Capabilities) *bool
	what  string
}{
	{func(c *Capabilities) *bool { return &c.Crash }, "crashing brokers (--kill-cmd and --restart-cmd, or a Crasher)"},
	{func(c *Capabilities) *bool { return &c.Pause }, "pausing brokers (--pause-cmd and --resume-cmd, or a Pauser)"},
	{func(c *Capabilities) *bool { return &c.Isolate }, "isolating brokers (--isolate-cmd and --heal-cmd, or an Isolator)"},
	{func(c *Capabilities) *bool { return &c.Slow }, "slowing brokers' links"},
	{func(c *Capabilities) *bool { return &c.ReplaceDisk },
		"replacing or damaging a broker's disk (a Cluster that owns its data directories: --target cluster or the simulator)"},
	{func(c *Capabilities) *bool { return &c.Stop }, "stopping brokers cleanly (--stop-cmd and --restart-cmd, or a Stopper)"},
	{func(c *Capabilities) *bool { return &c.PowerLoss },
		"cutting a machine's power, which a process on a running machine cannot (only the simulator's disks can: --target sim)"},
	{func(c *Capabilities) *bool { return &c.Messages },
		"dropping, duplicating or holding back single messages of one kind, which a TCP proxy cannot do without breaking the connection (only the simulator can: --target sim)"},
	{func(c *Capabilities) *bool { return &c.Failpoints },
		"switching failpoints at exact protocol steps (only the simulator can: --target sim; on real processes switch them on with GO_FAILPOINTS, failpoints/README.md)"},
	{func(c *Capabilities) *bool { return &c.Trace }, "exposing every replication step for trace validation (only the simulator can: --target sim)"},
}

// with is c and d together: every capability either has.
func (c Capabilities) with(d Capabilities) Capabilities {
	for _, x := range capabilities {
		*x.field(&c) = *x.field(&c) || *x.field(&d)
	}
	return c
}

// Lacking says what of need have lacks, each as what it lets a target do
// and how a target gets it; nil when have offers all of need.
func (need Capabilities) Lacking(have Capabilities) []string {
	var out []string
	for _, x := range capabilities {
		if *x.field(&need) && !*x.field(&have) {
			out = append(out, x.what)
		}
	}
	return out
}
