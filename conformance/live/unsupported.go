package live

import (
	"github.com/watermarkhq/watermark/conformance/run"
)

// Capabilities is the most a cluster of real processes offers the live
// runner: signals and proxies (crash, pause, isolate, slow), and, with a
// Cluster that owns its data directories or stops brokers cleanly
// (DiskReplacer, Stopper), replaced disks, damaged logs and clean stops.
// Never power loss, single messages struck, failpoints switched at a step
// or a trace: what its primitives cannot do (run.Striker).
var Capabilities = run.Capabilities{Crash: true, Pause: true, Isolate: true, Slow: true, ReplaceDisk: true, Stop: true}

// Unsupported says why cfg cannot run against real processes, or "" when
// it can. The simulator can do things a harness of real processes
// cannot: cut a machine's power, lose single messages, fire failpoints on
// a schedule across brokers (what cfg needs beyond Capabilities, as its
// faults' definitions say), drop messages at random, time a fault by
// acknowledged writes. A case that needs them is skipped with this
// reason rather than run without them and passed.
func Unsupported(cfg run.Spec) string {
	var why []string
	for _, what := range cfg.Needs().Lacking(Capabilities) {
		why = append(why, "it needs "+what)
	}
	if cfg.Network.DropRate > 0 {
		why = append(why, "it drops single messages between brokers, which a TCP proxy cannot do without breaking the connection")
	}
	for _, f := range cfg.Faults {
		if f.When.AfterAcks > 0 {
			why = append(why, "it times faults by acknowledged writes, which only the simulator can do exactly")
			break
		}
	}
	if len(why) == 0 {
		return ""
	}
	return "cannot run on real processes: " + why[0]
}
