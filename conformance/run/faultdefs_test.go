package run

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every kind of fault has exactly one definition, of its own kind, and
// every definition is of a kind run files name; each says how it strikes
// (a primitive, or the steps it unfolds into).
func TestEveryFaultKindHasOneDefinition(t *testing.T) {
	count := map[FaultKind]int{}
	for _, d := range faultDefs {
		require.Contains(t, FaultKinds, d.Kind, "a definition of a kind that is not in FaultKinds")
		count[d.Kind]++
		require.True(t, d.strike != nil || d.Unfolds, "%s: neither a strike nor steps", d.Kind)
		require.False(t, d.strike != nil && d.Unfolds, "%s: a strike that Inject never reaches", d.Kind)
	}
	for _, k := range FaultKinds {
		require.Equal(t, 1, count[k], "definitions of %s", k)
		require.NotNil(t, Def(k))
		require.Equal(t, k, Def(k).Kind)
	}
	require.Len(t, faultDefs, len(FaultKinds))
	require.Nil(t, Def("meteor"))
}

// Available refuses a fault whose needs a target's Capabilities lack,
// naming the fault and what it lacks with how to get it, and accepts one
// the target has.
func TestAvailableRefusesWhatATargetLacks(t *testing.T) {
	err := Def(FaultPause).Available(Capabilities{Crash: true, Isolate: true})
	require.Error(t, err)
	require.Contains(t, err.Error(), "pause needs pausing brokers (--pause-cmd and --resume-cmd, or a Pauser)")
	require.NoError(t, Def(FaultPause).Available(Capabilities{Pause: true}))

	err = Def(FaultBounceLeader).Available(Capabilities{Crash: true})
	require.ErrorContains(t, err, "bounce-leader needs isolating brokers")
	require.NoError(t, Def(FaultBounceLeader).Available(Capabilities{Crash: true, Isolate: true}))

	// What the live runner lacks, the faults that need it are refused.
	live := Capabilities{Crash: true, Pause: true, Isolate: true, Slow: true, ReplaceDisk: true, Stop: true}
	require.ErrorContains(t, Def(FaultPowerLoss).Available(live), "cutting a machine's power")
	require.ErrorContains(t, Def(FaultPowerLossAll).Available(live), "cutting a machine's power")
	require.ErrorContains(t, Def(FaultMessages).Available(live), "single messages")
	for _, k := range FaultKinds {
		require.NoError(t, Def(k).Available(AllCapabilities), "%s on the simulator", k)
	}
	// Client faults need nothing of a target.
	require.NoError(t, Def(FaultCrashConsumer).Available(Capabilities{}))
	require.NoError(t, Def(FaultRestartProducer).Available(Capabilities{}))
}

// A run needs what its faults' kinds and options need, and failpoints if
// it switches any.
func TestSpecNeeds(t *testing.T) {
	s := DefaultSpec(1)
	require.Equal(t, Capabilities{}, s.Needs())
	s.Faults = []Fault{
		{Kind: FaultStop, Node: 1, PowerOff: true},
		{Kind: FaultDamageLog, Node: 2, Clean: true},
	}
	s.Nemesis.Kinds = []FaultKind{FaultPause}
	require.Equal(t, Capabilities{Stop: true, PowerLoss: true, ReplaceDisk: true, Pause: true}, s.Needs())
	lack := s.Needs().Lacking(Capabilities{Pause: true, Stop: true})
	require.Len(t, lack, 2)
	require.Contains(t, lack[0], "replacing or damaging a broker's disk")
	require.Contains(t, lack[1], "cutting a machine's power")
	s.Failpoints = []Failpoint{{Name: "x"}}
	require.True(t, s.Needs().Failpoints)
}

// recorder is a Striker that writes down the primitives a fault uses.
type recorder struct {
	calls  []string
	broker int // what Broker answers; 0: none
	steps  []Step
	fail   error
}

func (r *recorder) add(format string, args ...any) error {
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
	return r.fail
}

func (r *recorder) Broker(f Fault) (int, bool) {
	r.calls = append(r.calls, "broker "+string(f.Kind))
	return r.broker, r.broker > 0
}
func (r *recorder) Unfold(f Fault) []Step {
	r.calls = append(r.calls, "unfold "+string(f.Kind))
	return r.steps
}
func (r *recorder) Later(afterMs int64, f Fault) {
	_ = r.add("later %d %s %d", afterMs, f.Kind, f.Node)
}
func (r *recorder) Notef(_ NoteKind, _ int, format string, args ...any) {
	r.calls = append(r.calls, "note "+fmt.Sprintf(format, args...))
}
func (r *recorder) Crash(id int, ms int64) error       { return r.add("crash %d %d", id, ms) }
func (r *recorder) PowerLoss(id int, ms int64) error   { return r.add("powerloss %d %d", id, ms) }
func (r *recorder) PowerLossAll(ms int64) error        { return r.add("powerloss-all %d", ms) }
func (r *recorder) ReplaceDisk(id int, ms int64) error { return r.add("replace-disk %d %d", id, ms) }
func (r *recorder) DamageLog(id int, f Fault, ms int64) error {
	return r.add("damage-log %d %d clean=%v", id, ms, f.Clean)
}
func (r *recorder) Stop(id int, ms int64, off bool) error {
	return r.add("stop %d %d off=%v", id, ms, off)
}
func (r *recorder) Pause(id int, ms int64) error   { return r.add("pause %d %d", id, ms) }
func (r *recorder) Isolate(id int, ms int64) error { return r.add("isolate %d %d", id, ms) }
func (r *recorder) Slow(id int, d, ms int64) error { return r.add("slow %d %d %d", id, d, ms) }
func (r *recorder) Messages(id int, m *MessageFault, ms int64) error {
	return r.add("messages %d drop=%v %d", id, m.Drop, ms)
}
func (r *recorder) Heal() error                         { return r.add("heal") }
func (r *recorder) RestartProducer(i int) error         { return r.add("restart-producer %d", i) }
func (r *recorder) CrashConsumer(i int, ms int64) error { return r.add("crash-consumer %d %d", i, ms) }

// Inject composes each fault of the runner's primitives: a broker fault
// strikes the broker the runner resolves it to, for Spec.Duration; a
// fault that unfolds strikes its steps later; a failed primitive is an
// error naming the fault and the broker.
func TestInjectComposesPrimitives(t *testing.T) {
	s := DefaultSpec(1) // restart_after_ms 1000
	for _, c := range []struct {
		f    Fault
		want string
	}{
		{Fault{Kind: FaultCrash, Node: 2, ForMs: 500}, "broker crash; crash 2 500"},
		{Fault{Kind: FaultPowerLoss, Role: RoleLeader}, "broker powerloss; powerloss 2 1000"},
		{Fault{Kind: FaultPause, Node: 2, ForMs: 300}, "broker pause; pause 2 300"},
		{Fault{Kind: FaultIsolate, Node: 2}, "broker isolate; isolate 2 0"},
		{Fault{Kind: FaultSlow, Node: 2, DelayMs: 40, ForMs: 300}, "broker slow; slow 2 40 300"},
		{Fault{Kind: FaultHeal}, "heal"},
		{Fault{Kind: FaultRestartProducer, Node: 1}, "restart-producer 1"},
		{Fault{Kind: FaultCrashConsumer, Node: 0, ForMs: 700}, "crash-consumer 0 700"},
		{Fault{Kind: FaultReplaceDisk, Node: 2}, "broker replace-disk; replace-disk 2 1000"},
		{Fault{Kind: FaultPowerLossAll, ForMs: 1500}, "powerloss-all 1500"},
		{Fault{Kind: FaultMessages, Node: 2, ForMs: 100, Messages: &MessageFault{Drop: 0.5}}, "broker messages; messages 2 drop=0.5 100"},
		{Fault{Kind: FaultDamageLog, Node: 2, Clean: true}, "broker damage-log; damage-log 2 1000 clean=true"},
		{Fault{Kind: FaultStop, Node: 2, PowerOff: true}, "broker stop; stop 2 1000 off=true"},
		{Fault{Kind: FaultBounceLeader}, "unfold bounce-leader; later 0 isolate 3; later 800 crash 1"},
		{Fault{Kind: FaultRollingStop}, "unfold rolling-stop; later 0 isolate 3; later 800 crash 1"},
		{Fault{Kind: FaultCrash, Node: 1, Repeat: 1}, "unfold crash; later 0 isolate 3; later 800 crash 1"},
	} {
		r := &recorder{broker: 2, steps: []Step{{0, Fault{Kind: FaultIsolate, Node: 3}}, {800, Fault{Kind: FaultCrash, Node: 1}}}}
		require.NoError(t, Def(c.f.Kind).Inject(r, &s, c.f), "%s", c.f.Kind)
		require.Equal(t, c.want, strings.Join(r.calls, "; "), "%s", c.f.Kind)
	}

	// No broker to strike now: no primitive runs (Broker noted why).
	r := &recorder{}
	require.NoError(t, Def(FaultCrash).Inject(r, &s, Fault{Kind: FaultCrash, Role: RoleFollower}))
	require.Equal(t, []string{"broker crash"}, r.calls)
	// Nothing to unfold now: noted, and nothing strikes.
	r = &recorder{}
	require.NoError(t, Def(FaultBounceLeader).Inject(r, &s, Fault{Kind: FaultBounceLeader}))
	require.Equal(t, []string{"unfold bounce-leader", "note bounce-leader: no leader or no follower to strike now, skipped"}, r.calls)

	// A primitive the runner cannot do is an error naming the fault and
	// the broker, with the runner's reason.
	r = &recorder{broker: 3, fail: errors.New("the live runner cannot cut a machine's power")}
	err := Def(FaultPowerLoss).Inject(r, &s, Fault{Kind: FaultPowerLoss, Node: 3})
	var se *StrikeError
	require.ErrorAs(t, err, &se)
	require.Equal(t, FaultPowerLoss, se.Kind)
	require.Equal(t, 3, se.Node)
	require.Equal(t, "powerloss broker 3 failed: the live runner cannot cut a machine's power", err.Error())
}
