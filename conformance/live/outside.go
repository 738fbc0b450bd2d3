package live

import (
	"slices"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/linearizability"
)

// noteRefusedAfterAppend finds, in a finished history, what the simulator
// sees from inside as run.SitRefusedAfterAppend: a produce the broker
// answered with an error code (the client did not just time out) whose
// record a consumer then read. The broker had appended it when it
// answered, whatever the error said. A value produced twice (a resend)
// is left out: which produce wrote the record read cannot be told.
func (l *live) noteRefusedAfterAppend() {
	read := map[string]bool{}
	produced := map[string]int{}
	for i := range l.History {
		op := &l.History[i]
		switch op.Kind {
		case linearizability.KindProduce:
			produced[op.Value]++
		case linearizability.KindFetch:
			if op.Outcome == linearizability.OutcomeOK {
				for _, r := range op.Records {
					read[r.Value] = true
				}
			}
		}
	}
	for i := range l.History {
		op := &l.History[i]
		if op.Kind == linearizability.KindProduce && op.Outcome != linearizability.OutcomeOK &&
			op.Code != 0 && produced[op.Value] == 1 && read[op.Value] {
			l.Reached(run.SitRefusedAfterAppend)
		}
	}
}

// hwView is what the runner saw of one partition's high watermarks and
// ISR growth, from outside, by leader epoch.
type hwView struct {
	// top is the highest HW a leader reported in each epoch (a fetch
	// answered without error to a request naming that epoch, KIP-320:
	// the broker that answered led in it).
	top map[int32]int64
	// behind: epochs whose leader was seen with a HW below an earlier
	// epoch's (counted once each).
	behind map[int32]bool
	// grew is when the runner first saw the ISR grow in each epoch;
	// counted: the epochs whose growth was seen inside a HW gap.
	grew    map[int32]int64
	counted map[int32]bool
}

// hw is tp's view, made on first use.
func (l *live) hw(tp kafka.TopicPartition) *hwView {
	if l.hws == nil {
		l.hws = map[kafka.TopicPartition]*hwView{}
	}
	v := l.hws[tp]
	if v == nil {
		v = &hwView{top: map[int32]int64{}, behind: map[int32]bool{}, grew: map[int32]int64{}, counted: map[int32]bool{}}
		l.hws[tp] = v
	}
	return v
}

// noteISRGrowth sees, in broker from's metadata answer, an ISR that grew
// since that broker's last answer within one leader epoch. One broker's
// answers move forward in time, so the growth is real and happened in
// that epoch before now (answers from different brokers may be behind one
// another and are never compared).
func (l *live) noteISRGrowth(from clientmsg.NodeID, m clientmsg.MetadataResponse) {
	if l.seenBy == nil {
		l.seenBy = map[clientmsg.NodeID]map[kafka.TopicPartition]kafka.PartitionState{}
	}
	last := l.seenBy[from]
	if last == nil {
		last = map[kafka.TopicPartition]kafka.PartitionState{}
		l.seenBy[from] = last
	}
	for _, p := range m.Partitions {
		old, ok := last[p.TopicPartition]
		last[p.TopicPartition] = p.Clone()
		if !ok || p.Leader < 0 || old.LeaderEpoch != p.LeaderEpoch {
			continue
		}
		for _, r := range p.ISR {
			if !slices.Contains(old.ISR, r) {
				v := l.hw(p.TopicPartition)
				if _, seen := v.grew[p.LeaderEpoch]; !seen {
					v.grew[p.LeaderEpoch] = l.Now
				}
				break
			}
		}
	}
}

// noteHW sees a fetch answer's HW: a leader whose HW is below one an
// earlier epoch's leader reported is a new leader behind the committed
// HW (run.SitNewLeaderHWBehind), and an ISR seen growing in its epoch
// before the fetch went out grew inside that gap (a leader's HW only
// rises within its epoch, so it was behind then too;
// run.SitExpandWhileHWBehind). These are the simulator's situations,
// seen from outside.
func (l *live) noteHW(a answer) {
	resp, ok := a.env.Msg.(clientmsg.FetchResponse)
	req, asked := a.req.(clientmsg.FetchRequest)
	if !ok || !asked || resp.Err != nil || req.CurrentLeaderEpoch < 0 {
		return
	}
	e := req.CurrentLeaderEpoch
	v := l.hw(resp.TopicPartition)
	committed := int64(-1)
	for epoch, hw := range v.top {
		if epoch < e {
			committed = max(committed, hw)
		}
	}
	if resp.HW < committed {
		if !v.behind[e] {
			v.behind[e] = true
			l.Reached(run.SitNewLeaderHWBehind)
		}
		if at, grew := v.grew[e]; grew && a.sentAt >= at && !v.counted[e] {
			v.counted[e] = true
			l.Reached(run.SitExpandWhileHWBehind)
		}
	}
	if top, seen := v.top[e]; !seen || resp.HW > top {
		v.top[e] = resp.HW
	}
}
