package search

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/run"
)

// ForLive turns a random schedule into one real processes can carry out
// (live.Unsupported): a power loss becomes a crash (a process cannot cut
// its machine's power, and a clean stop's power_off is dropped); faults
// timed by acknowledged writes strike at a time instead, the nth
// acknowledgement taken as about 100 ms of a run; the faults and network
// losses that strike single messages, and every failpoint, go. What is
// left (crashes, pauses, isolation, slowness, clean stops and rolling
// stops, replaced and damaged disks) strikes as drawn. Deterministic: the
// same schedule gives the same live schedule.
func ForLive(s *run.Spec) {
	s.Failpoints = nil
	s.Network.DropRate = 0
	s.Network.ResponseDropRate = 0
	s.Faults = slices.DeleteFunc(s.Faults, func(f run.Fault) bool {
		return f.Kind == run.FaultMessages || f.Kind == run.FaultPowerLossAll
	})
	for i := range s.Faults {
		f := &s.Faults[i]
		if f.Kind == run.FaultPowerLoss {
			f.Kind = run.FaultCrash
		}
		f.PowerOff = false
		if f.When.AfterAcks > 0 {
			f.When = run.Trigger{AtMs: min(1000+100*int64(f.When.AfterAcks), s.DurationMs/2)}
		}
	}
	for i := range s.Nemesis.Kinds {
		if s.Nemesis.Kinds[i] == run.FaultPowerLoss || s.Nemesis.Kinds[i] == run.FaultPowerLossAll {
			s.Nemesis.Kinds[i] = run.FaultCrash
		}
	}
	s.Nemesis.Kinds = slices.DeleteFunc(s.Nemesis.Kinds, func(k run.FaultKind) bool { return k == run.FaultMessages })
}

// runOn runs specs on opts.Target one after the other and judges each by
// c; a run the target cannot carry out is an error, since ForLive drew
// it for real processes.
func runOn(specs []run.Spec, c *cases.Case, opts RandomOptions) ([]*judge.RunResult, error) {
	ctx := opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	out := make([]*judge.RunResult, 0, len(specs))
	for _, spec := range specs {
		if ctx.Err() != nil {
			break
		}
		t := time.Now()
		res, err := opts.Target.Run(ctx, spec)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return nil, fmt.Errorf("random seed %d on %s: %w", spec.Seed, opts.Target.Name(), err)
		}
		r := judge.Judge(c, res, opts.CheckTimeout)
		r.Elapsed, r.Target = time.Since(t), opts.Target.Name()
		out = append(out, r)
	}
	return out, nil
}
