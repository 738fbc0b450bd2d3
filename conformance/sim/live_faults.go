package sim

import (
	"fmt"
	"time"
)

// inject applies one fault to the real cluster now and schedules its end.
func (l *live) inject(f Fault) {
	cl := l.opts.Cluster
	switch f.Kind {
	case FaultHeal:
		l.stats.Faults++
		l.heal()
		return
	case FaultRestartProducer:
		l.stats.Faults++
		l.clients[f.Node].restartProducer()
		return
	case FaultCrashConsumer:
		l.stats.Faults++
		l.groupConsumer(f.Node).crashGroupConsumer(l.faultDuration(f))
		return
	}
	id, ok := l.resolve(f)
	if !ok {
		l.note(fmt.Sprintf("%s of the %s: no such broker now, skipped", f.Kind, f.Role))
		return
	}
	dur := f.ForMs
	if dur == 0 && f.Kind != FaultIsolate {
		dur = l.cfg.RestartAfterMs
	}
	fail := func(err error) bool {
		if err != nil {
			l.note(fmt.Sprintf("%s broker %d failed: %v", f.Kind, id, err))
			return true
		}
		return false
	}
	switch f.Kind {
	case FaultCrash:
		if l.down[id] {
			return
		}
		if l.paused[id] {
			l.paused[id] = false
			l.faulted[id]--
		}
		if fail(cl.Kill(id)) {
			return
		}
		l.down[id] = true
		l.faulted[id]++
		l.stats.Faults++
		l.stats.Crashes++
		l.note(fmt.Sprintf("crash broker %d (SIGKILL)", id))
		l.at(l.now+dur, func() { l.restart(id) })
	case FaultPause:
		if l.down[id] || l.paused[id] || fail(cl.Pause(id)) {
			return
		}
		l.paused[id] = true
		l.faulted[id]++
		l.stats.Faults++
		l.note(fmt.Sprintf("pause broker %d for %d ms (SIGSTOP)", id, dur))
		l.at(l.now+dur, func() { l.resume(id) })
	case FaultIsolate:
		if fail(cl.Isolate(id)) {
			return
		}
		l.faulted[id]++
		l.stats.Faults++
		l.note(fmt.Sprintf("isolate broker %d", id))
		if dur > 0 {
			l.at(l.now+dur, l.heal)
		}
	case FaultSlow:
		if fail(cl.SetLatency(id, time.Duration(f.DelayMs)*time.Millisecond)) {
			return
		}
		l.faulted[id]++
		l.stats.Faults++
		l.note(fmt.Sprintf("slow broker %d by %d ms for %d ms", id, f.DelayMs, dur))
		l.at(l.now+dur, func() {
			if cl.SetLatency(id, 0) == nil {
				l.faulted[id]--
				l.note(fmt.Sprintf("broker %d is fast again", id))
			}
		})
	}
}

func (l *live) restart(id int) {
	if !l.down[id] {
		return
	}
	if err := l.opts.Cluster.Restart(id); err != nil {
		l.note(fmt.Sprintf("restart broker %d failed: %v", id, err))
		l.at(l.now+l.cfg.RestartAfterMs, func() { l.restart(id) })
		return
	}
	l.down[id] = false
	l.faulted[id]--
	l.note(fmt.Sprintf("restart broker %d", id))
}

func (l *live) resume(id int) {
	if !l.paused[id] {
		return
	}
	if err := l.opts.Cluster.Resume(id); err != nil {
		l.note(fmt.Sprintf("resume broker %d failed: %v", id, err))
		return
	}
	l.paused[id] = false
	l.faulted[id]--
	l.note(fmt.Sprintf("resume broker %d", id))
}

// heal ends every network fault (isolation and slowness).
func (l *live) heal() {
	if err := l.opts.Cluster.Heal(); err != nil {
		l.note(fmt.Sprintf("heal failed: %v", err))
		return
	}
	for id := 1; id <= l.cfg.Brokers; id++ {
		if !l.down[id] && !l.paused[id] {
			l.faulted[id] = 0
		}
	}
	l.note("heal network faults")
}

// healAll ends every fault so the run can settle; crashed brokers restart
// on their own schedule.
func (l *live) healAll() {
	l.heal()
	for id := 1; id <= l.cfg.Brokers; id++ {
		l.resume(id)
	}
	l.note("heal all faults")
}

// resolve picks the broker a fault strikes, from the leaders the runner
// last learnt.
func (l *live) resolve(f Fault) (int, bool) {
	if f.Role == RoleAny {
		return f.Node, f.Node >= 1 && f.Node <= l.cfg.Brokers
	}
	tp := l.partitions()[0]
	if f.Partition != nil {
		tp = *f.Partition
	}
	if f.Role == RoleCoordinator {
		tp = GroupPartition(l.cfg.Workload.Group)
	}
	l.refreshLeaders(l.ctx)
	p, ok := l.leaders[tp]
	if !ok || p.Leader <= 0 {
		return 0, false
	}
	if f.Role == RoleLeader || f.Role == RoleCoordinator {
		return int(p.Leader), true
	}
	var followers []int
	for _, id := range p.Replicas {
		if id != p.Leader {
			followers = append(followers, int(id))
		}
	}
	if len(followers) == 0 {
		return 0, false
	}
	return followers[l.rng.IntN(len(followers))], true
}

func (l *live) nemesisDelay() int64 {
	iv := l.cfg.Nemesis.IntervalMs
	if iv <= 0 {
		iv = 2000
	}
	return iv/2 + l.rng.Int64N(iv+1)
}

// nemesis draws one random fault within the budget of faulted brokers, as
// the simulator's does.
func (l *live) nemesis() {
	nm := l.cfg.Nemesis
	if l.nemesisConsumers() {
		return
	}
	faulty := 0
	var healthy []int
	for id := 1; id <= l.cfg.Brokers; id++ {
		if l.faulted[id] > 0 || l.down[id] {
			faulty++
		} else {
			healthy = append(healthy, id)
		}
	}
	if faulty >= max(nm.MaxFaulty, 1) || len(healthy) == 0 {
		return
	}
	f := Fault{Kind: nm.Kinds[l.rng.IntN(len(nm.Kinds))], ForMs: nm.FaultMs, DelayMs: nm.DelayMs, Role: nm.Role}
	if f.ForMs <= 0 {
		f.ForMs = l.cfg.RestartAfterMs
	}
	if f.Kind == FaultSlow && f.DelayMs <= 0 {
		f.DelayMs = 500
	}
	if nm.Role == RoleAny {
		f.Node = healthy[l.rng.IntN(len(healthy))]
	} else {
		tps := l.partitions()
		tp := tps[l.rng.IntN(len(tps))]
		f.Partition = &tp
		id, ok := l.resolve(f)
		if !ok || l.faulted[id] > 0 || l.down[id] {
			return
		}
		f.Role, f.Node = RoleAny, id
	}
	l.inject(f)
}
