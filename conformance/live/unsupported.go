package live

import (
	"slices"

	"github.com/watermarkhq/watermark/conformance/run"
)

// Unsupported says why cfg cannot run against real processes, or "" when
// it can. The simulator can do things a harness of real processes
// cannot: cut a machine's power, lose single messages, fire failpoints on
// a schedule across brokers. A case that needs them is skipped with this
// reason rather than run without them and passed.
func Unsupported(cfg run.Spec) string {
	var why []string
	kinds := cfg.Kinds()
	if slices.Contains(kinds, run.FaultPowerLoss) || slices.Contains(kinds, run.FaultPowerLossAll) {
		why = append(why, "it cuts power, which a process on a running machine cannot (the simulator's disks can)")
	}
	if slices.Contains(kinds, run.FaultMessages) {
		why = append(why, "it drops, duplicates or holds back single messages of one kind, which a TCP proxy cannot do without breaking the connection")
	}
	if len(cfg.Failpoints) > 0 {
		why = append(why, "it schedules failpoints across brokers, which the simulator does; on real processes switch failpoints on with GO_FAILPOINTS (failpoints/README.md)")
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
	for _, f := range cfg.Faults {
		if f.PowerOff {
			why = append(why, "it powers off machines after a clean stop, which a process on a running machine cannot (the simulator's disks can)")
			break
		}
	}
	if len(why) == 0 {
		return ""
	}
	return "cannot run on real processes: " + why[0]
}
