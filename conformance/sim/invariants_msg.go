package sim

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/storage"
)

// The invariants here watch messages as they leave a broker: what a
// leader acknowledges and what it serves, judged against the state of
// the cluster at that moment. They hold the requests in flight to
// judge the answers.

// reqKey names a request by who sent it, its partition and its id
// (replicas number their fetches per partition).
type reqKey struct {
	from broker.NodeID
	tp   kafka.TopicPartition
	id   uint64
}

// sentProduce is what an answer to a produce is judged by.
type sentProduce struct {
	acks    partition.Acks
	records int
	first   []byte // the first record's value
	pid     int64
	epoch   int16
	seq     int32
}

// replicaState is what the checks read of a replica (*partition.Replica).
type replicaState interface {
	HW() int64
	LEO() int64
	LogStart() int64
	Log() []record.Batch
	LeaderEpoch() int32
	ISR() []int32
}

// onSend watches one message as it enters the network: coverage first,
// then the invariants (sendWatch).
func (inv *invariants) onSend(env broker.Envelope) {
	inv.cov.message(inv.s, env)
	_, _ = sendWatch().Handle(sending{inv, env}, env.Msg)
}

// sending is what an invariant sees of a message entering the network.
type sending struct {
	inv *invariants
	env broker.Envelope
}

// sendWatch is what the invariants note or check of each kind of message
// as it leaves its sender: requests are noted until their answers leave.
var sendWatch = sync.OnceValue(func() *kafka.Handlers[sending] {
	h := &kafka.Handlers[sending]{}
	kafka.On(h, func(w sending, m broker.ProduceRequest) error {
		w.inv.produces[reqKey{w.env.From, m.TopicPartition, m.Correlation}] = sentProduce{acks: m.Acks, records: m.Batch.Len(), first: firstValue(&m.Batch),
			pid: m.Batch.ProducerID, epoch: m.Batch.ProducerEpoch, seq: m.Batch.BaseSequence}
		return nil
	})
	kafka.On(h, func(w sending, m broker.FetchRequest) error {
		w.inv.fetchEpochs[reqKey{w.env.From, m.TopicPartition, m.Correlation}] = m.CurrentLeaderEpoch
		return nil
	})
	kafka.On(h, func(w sending, m partition.FetchRequest) error {
		w.inv.fetchEpochs[reqKey{w.env.From, m.TopicPartition, m.ID}] = m.CurrentLeaderEpoch
		w.inv.sentFollowerFetch(w.env, m)
		return nil
	})
	kafka.On(h, func(w sending, m broker.ListOffsetsRequest) error { w.inv.sentLookup(w.env, m); return nil })
	kafka.On(h, func(w sending, m broker.ListOffsetsResponse) error {
		w.inv.checkLookup(w.env.From, w.env.To, m)
		return nil
	})
	kafka.On(h, func(w sending, m broker.ProduceResponse) error {
		inv, env := w.inv, w.env
		k := reqKey{env.To, m.TopicPartition, m.Correlation}
		p, ok := inv.produces[k]
		delete(inv.produces, k)
		if ok && m.Err != nil {
			inv.cov.refused(inv.s, env.From, m.TopicPartition, p)
		}
		if ok && m.Err == nil {
			inv.cov.acknowledged(inv.s, m.TopicPartition, p)
			if p.acks == partition.AcksAll {
				inv.checkAck(env.From, m, p)
			}
		}
		return nil
	})
	kafka.On(h, func(w sending, m broker.FetchResponse) error {
		w.inv.checkServed(w.env.From, reqKey{w.env.To, m.TopicPartition, m.Correlation}, m.Err == nil && len(m.Batches) > 0, m.TopicPartition)
		return nil
	})
	kafka.On(h, func(w sending, m partition.FetchResponse) error {
		w.inv.checkServed(w.env.From, reqKey{w.env.To, m.TopicPartition, m.ID}, m.Err == nil && len(m.Batches) > 0, m.TopicPartition)
		return nil
	})
	return h
})

// checkAck: an acks=all success is sent only for a batch below the
// leader's HW that every ISR member the controller could elect holds.
func (inv *invariants) checkAck(from broker.NodeID, m broker.ProduceResponse, p sentProduce) {
	n := inv.s.nodes[from]
	if n.b == nil {
		return
	}
	r, ok := n.b.Replica(m.TopicPartition)
	if !ok {
		inv.fail(run.InvAckedIsCommitted, fmt.Sprintf("%s: broker %d acknowledged offset %d (acks=all) without a replica", m.TopicPartition, from, m.BaseOffset))
		return
	}
	members := map[int32]replicaState{}
	ctrl := inv.s.controller()
	for _, id := range r.ISR() {
		mn := inv.s.nodes[id]
		if id == int32(from) || mn.b == nil {
			continue
		}
		if inc, _ := ctrl.Incarnation(id); inc != mn.b.Incarnation() || !ctrl.IsAlive(id) {
			continue // restarted and not yet heard of: not electable
		}
		if st, ok := ctrl.Partition(m.TopicPartition); ok && !slices.Contains(st.ISR, id) && !slices.Contains(ctrl.ELR(m.TopicPartition), id) {
			// The controller took it out of the ISR (a leader that has
			// not heard yet still counts it): no clean election picks it.
			continue
		}
		if mr, ok := mn.b.Replica(m.TopicPartition); ok {
			if _ = mr.Log(); mr.ReadFailed() {
				// Damage its start trusted (below the recovery point),
				// met by this very read: the broker crashes at its next
				// step and its loss is judged by the lost-data rules.
				// What it holds is unknown here, not missing.
				continue
			}
			members[id] = mr
		}
	}
	if why := ackProblem(r, m.BaseOffset, p.records, members); why != "" {
		inv.fail(run.InvAckedIsCommitted, fmt.Sprintf("%s: broker %d acknowledged offsets %d..%d (acks=all): %s",
			m.TopicPartition, from, m.BaseOffset, m.BaseOffset+int64(p.records)-1, why))
	}
}

// ackProblem says why acknowledging records [base, base+n) as committed
// is wrong on leader l with ISR members (other than l) members; "" when
// it is right.
func ackProblem(l replicaState, base int64, n int, members map[int32]replicaState) string {
	last := base + int64(n) - 1
	if l.HW() <= last {
		return fmt.Sprintf("its HW is %d", l.HW())
	}
	if base < l.LogStart() {
		return "" // below the HW, and retention deleted it since: committed
	}
	i := batchIndex(l.Log(), base)
	if i >= len(l.Log()) {
		return fmt.Sprintf("its log ends at %d", l.LEO())
	}
	want := idOf(&l.Log()[i])
	var missing []string
	for _, id := range slices.Sorted(maps.Keys(members)) {
		if members[id].LogStart() > base {
			continue // its own retention deleted it, below its HW
		}
		mlog := members[id].Log()
		j := batchIndex(mlog, base)
		if j >= len(mlog) || !idOf(&mlog[j]).same(want) {
			missing = append(missing, fmt.Sprint(id))
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("ISR member(s) %s do not hold it", strings.Join(missing, ", "))
	}
	return ""
}

// checkServed: a fetch that named a leader epoch other than the
// responder's is never served records.
func (inv *invariants) checkServed(from broker.NodeID, k reqKey, served bool, tp kafka.TopicPartition) {
	asked, ok := inv.fetchEpochs[k]
	delete(inv.fetchEpochs, k)
	n := inv.s.nodes[from]
	if !ok || !served || n.b == nil {
		return
	}
	r, ok := n.b.Replica(tp)
	if !ok {
		return
	}
	if why := staleServe(asked, r.LeaderEpoch()); why != "" {
		inv.fail(run.InvStaleEpochFenced, fmt.Sprintf("%s: broker %d served a fetch from %d: %s", tp, from, k.from, why))
	}
}

// staleServe says why serving records to a fetch that named leader epoch
// asked is wrong on a replica in leader epoch epoch; "" when it is not.
// A fetch naming no epoch (-1, before KIP-320) is not checked.
func staleServe(asked, epoch int32) string {
	switch {
	case asked < 0:
	case asked < epoch:
		return fmt.Sprintf("it named leader epoch %d, older than the broker's %d (KIP-320: FENCED_LEADER_EPOCH)", asked, epoch)
	case asked > epoch:
		return fmt.Sprintf("it named leader epoch %d, newer than the broker's %d: a deposed leader served it (KIP-320: UNKNOWN_LEADER_EPOCH)", asked, epoch)
	}
	return ""
}

// checkHW: no live replica's HW is past its log end.
func (inv *invariants) checkHW(v replicaView) {
	if why := hwProblem(v.r); why != "" {
		inv.fail(run.InvHWWithinLog, fmt.Sprintf("%s on broker %d: %s", v.r.TopicPartition(), v.id, why))
	}
}

func hwProblem(r replicaState) string {
	if r.HW() > r.LEO() {
		return fmt.Sprintf("HW %d is past the log end %d", r.HW(), r.LEO())
	}
	return ""
}

// beforePowerLoss remembers how much of each log on n's disk is synced:
// what recovery must keep.
func (inv *invariants) beforePowerLoss(n *node) {
	names, _ := n.disk.List("")
	synced := map[string]int64{}
	unsynced := map[string]int{} // segments with unsynced bytes, by log
	for _, name := range names {
		if storage.IsSegmentFile(name) {
			synced[name] = n.disk.Stable(name)
			if n.disk.UnsyncedBytes(name) > 0 {
				unsynced[path.Dir(name)]++
			}
		}
	}
	for _, k := range unsynced {
		if k >= 2 {
			inv.s.Reached(run.SitRollPowerLoss)
			break
		}
	}
	inv.synced[n.id] = synced
}

// afterLoss records what the power loss left of each log, before
// recovery reads it.
func (inv *invariants) afterLoss(n *node) {
	left := map[string]int64{}
	for name := range inv.synced[n.id] {
		left[name] = n.disk.Size(name)
	}
	inv.left[n.id] = left
}

// afterRecovery checks that broker n's recovery kept every synced byte of
// each log, and counts the torn tails it dropped.
func (inv *invariants) afterRecovery(n *node) {
	synced, left := inv.synced[n.id], inv.left[n.id]
	delete(inv.synced, n.id)
	delete(inv.left, n.id)
	for _, name := range slices.Sorted(maps.Keys(synced)) {
		kept := max(n.disk.Size(name), 0) // a file never synced vanishes
		if why := syncedProblem(synced[name], kept); why != "" {
			inv.fail(run.InvSyncedSurvives, fmt.Sprintf("broker %d, log %s: %s", n.id, name, why))
		}
		if kept < left[name] {
			inv.s.Reached(run.SitTornTail)
		}
	}
}

func syncedProblem(synced, kept int64) string {
	if kept < synced {
		return fmt.Sprintf("%d bytes were synced before the power loss; recovery kept %d", synced, kept)
	}
	return ""
}
