package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/record"
)

// fakeReplica is a replica's state as the invariants read it.
type fakeReplica struct {
	hw, leo int64
	epoch   int32
	isr     []int32
	log     []record.Batch
}

func (f fakeReplica) HW() int64           { return f.hw }
func (f fakeReplica) LEO() int64          { return f.leo }
func (f fakeReplica) Log() []record.Batch { return f.log }
func (f fakeReplica) LogStart() int64 {
	if len(f.log) == 0 {
		return f.leo
	}
	return f.log[0].BaseOffset
}
func (f fakeReplica) LeaderEpoch() int32 { return f.epoch }
func (f fakeReplica) ISR() []int32       { return f.isr }

// batches builds a log of one-record batches written in epoch, with
// values from vals.
func batches(epoch int32, vals ...string) []record.Batch {
	var out []record.Batch
	for i, v := range vals {
		out = append(out, record.Batch{BaseOffset: int64(i), LeaderEpoch: epoch, Records: []record.Record{{Value: []byte(v)}}})
	}
	return out
}

func replicaOf(hw int64, log []record.Batch) fakeReplica {
	return fakeReplica{hw: hw, leo: int64(len(log)), log: log}
}

func TestAckedIsCommitted(t *testing.T) {
	leader := replicaOf(2, batches(1, "a", "b", "c"))
	full := map[int32]replicaState{2: replicaOf(2, batches(1, "a", "b")), 3: replicaOf(1, batches(1, "a", "b", "c"))}
	t.Run("quiet: below the HW and on every ISR member", func(t *testing.T) {
		assert.Empty(t, ackProblem(leader, 1, 1, full))
		assert.Empty(t, ackProblem(leader, 0, 2, full))
	})
	t.Run("fires: at the HW", func(t *testing.T) {
		assert.Contains(t, ackProblem(leader, 2, 1, full), "HW is 2")
		assert.Contains(t, ackProblem(leader, 1, 2, full), "HW is 2", "the batch's last record is at the HW")
	})
	t.Run("fires: an ISR member lacks it", func(t *testing.T) {
		short := map[int32]replicaState{2: replicaOf(1, batches(1, "a")), 3: full[3]}
		assert.Contains(t, ackProblem(leader, 1, 1, short), "member(s) 2 do not hold it")
	})
	t.Run("fires: an ISR member holds another batch there", func(t *testing.T) {
		other := map[int32]replicaState{2: replicaOf(2, batches(1, "a", "x")), 3: replicaOf(2, batches(0, "a", "b"))}
		assert.Contains(t, ackProblem(leader, 1, 1, other), "member(s) 2, 3 do not hold it")
	})
}

func TestStaleEpochFenced(t *testing.T) {
	assert.Empty(t, staleServe(3, 3), "quiet: the leader's own epoch")
	assert.Empty(t, staleServe(-1, 3), "quiet: a fetch that names no epoch")
	assert.Contains(t, staleServe(2, 3), "older than the broker's 3", "fires: an older epoch served")
	assert.Contains(t, staleServe(4, 3), "newer than the broker's 3", "fires: a deposed leader serves a newer epoch")
}

func TestHWWithinLog(t *testing.T) {
	assert.Empty(t, hwProblem(fakeReplica{hw: 3, leo: 3}), "quiet: HW at the log end")
	assert.Contains(t, hwProblem(fakeReplica{hw: 4, leo: 3}), "HW 4 is past the log end 3")
}

func TestSyncedSurvivesPowerLoss(t *testing.T) {
	assert.Empty(t, syncedProblem(100, 100), "quiet: every synced byte kept")
	assert.Empty(t, syncedProblem(100, 140), "quiet: a torn tail's whole frames kept too")
	assert.Empty(t, syncedProblem(0, 0), "quiet: nothing was synced")
	assert.Contains(t, syncedProblem(100, 60), "100 bytes were synced before the power loss; recovery kept 60")
}

func TestStrongISRJudgedByTheCommittedHW(t *testing.T) {
	// A new leader's HW (2) lags what the previous leader committed (4).
	member := replicaOf(2, batches(1, "a", "b", "c"))
	assert.Empty(t, behindCommitted(3, member), "quiet: the member holds what was committed")
	assert.Contains(t, behindCommitted(4, member), "ends at 3, below the committed HW 4",
		"fires: a member that joined the ISR in the gap between the new leader's HW and the committed HW")
}

func TestHWOnMinISR(t *testing.T) {
	assert.Empty(t, hwBelowMinISR(3, 5, []int32{1, 2}, 2), "quiet: an ISR of min.insync.replicas")
	assert.Contains(t, hwBelowMinISR(3, 5, []int32{1}, 2), "HW went from 3 to 5 with ISR [1], below min.insync.replicas 2",
		"fires: the last replica standing moves the HW on (KIP-966)")
}

func TestReplicaEpochsNeverGoBack(t *testing.T) {
	assert.Empty(t, epochsBack([2]int32{2, 5}, [2]int32{2, 6}), "quiet: a newer partition epoch")
	assert.Empty(t, epochsBack([2]int32{2, 5}, [2]int32{3, 1}), "quiet: a newer leader epoch")
	assert.Contains(t, epochsBack([2]int32{2, 5}, [2]int32{2, 4}), "went back from leader epoch 2, partition epoch 5",
		"fires: a stale state applied")
	assert.Contains(t, epochsBack([2]int32{3, 1}, [2]int32{2, 9}), "went back")
}

func TestISRMembersAlive(t *testing.T) {
	alive := func(id int32) bool { return id != 3 }
	assert.Empty(t, deadInISR([]int32{1, 2}, alive), "quiet: every member alive")
	assert.Empty(t, deadInISR([]int32{3}, alive), "quiet: a dead last member is kept")
	assert.Contains(t, deadInISR([]int32{1, 3}, alive), "broker 3, dead to the controller, is in the ISR [1 3]",
		"fires: a dead broker kept in, or added to, a larger ISR")
}

// OffsetLookup: latest is the leader's HW, earliest its log start; the
// right answers pass.
func TestLookupProblem(t *testing.T) {
	require.Empty(t, lookupProblem(true, 10, 0, 10), "latest = the HW")
	require.Contains(t, lookupProblem(true, 12, 0, 10), "not the leader's HW 10")
	require.Contains(t, lookupProblem(true, 7, 0, 10), "not the leader's HW 10")
	require.Empty(t, lookupProblem(false, 4, 4, 10), "earliest = the log start")
	require.Contains(t, lookupProblem(false, 0, 4, 10), "not the leader's log start 4")
}
