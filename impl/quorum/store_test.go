package quorum

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/storage"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

func entries(term uint64, from, to uint64) []*pb.Entry {
	var out []*pb.Entry
	for i := from; i <= to; i++ {
		out = append(out, &pb.Entry{Term: new(term), Index: new(i), Data: []byte{byte(i)}})
	}
	return out
}

func lastIndex(t *testing.T, s *store) uint64 {
	t.Helper()
	last, err := s.mem.LastIndex()
	require.NoError(t, err)
	return last
}

func TestStoreKeepsWhatItSavedAcrossAPowerLoss(t *testing.T) {
	d := storage.NewSimDisk()
	s, err := openStore(d, []uint64{1, 2, 3})
	require.NoError(t, err)
	require.NoError(t, s.save(raft.Ready{Entries: entries(2, 2, 9), HardState: &pb.HardState{Term: new(uint64(2)), Vote: new(uint64(1)), Commit: new(uint64(5))}}))
	d.PowerLoss(rand.New(rand.NewPCG(1, 2)))
	s, err = openStore(d, []uint64{1, 2, 3})
	require.NoError(t, err)
	assert.Equal(t, uint64(9), lastIndex(t, s))
	hs, _, err := s.mem.InitialState()
	require.NoError(t, err)
	assert.Equal(t, uint64(5), hs.GetCommit())
	assert.Equal(t, uint64(1), hs.GetVote())
}

func TestStoreOverwritesASuffixANewLeaderReplaced(t *testing.T) {
	d := storage.NewSimDisk()
	s, err := openStore(d, []uint64{1})
	require.NoError(t, err)
	require.NoError(t, s.save(raft.Ready{Entries: entries(2, 2, 9)}))
	require.NoError(t, s.save(raft.Ready{Entries: entries(3, 5, 6)}))
	s, err = openStore(d, []uint64{1})
	require.NoError(t, err)
	assert.Equal(t, uint64(6), lastIndex(t, s))
	term, err := s.mem.Term(6)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), term)
}

func TestStoreCutsATornTail(t *testing.T) {
	d := storage.NewSimDisk()
	s, err := openStore(d, []uint64{1})
	require.NoError(t, err)
	require.NoError(t, s.save(raft.Ready{Entries: entries(2, 2, 4)}))
	require.NoError(t, d.Append(logFile, []byte{0, 0, 0, 40, 1, 2})) // half a frame
	s, err = openStore(d, []uint64{1})
	require.NoError(t, err)
	assert.Equal(t, uint64(4), lastIndex(t, s))
	size, err := d.FileSize(logFile)
	require.NoError(t, err)
	assert.Equal(t, s.size(), size, "the torn frame is cut off")
	require.NoError(t, s.save(raft.Ready{Entries: entries(2, 5, 5)}))
}

func TestStoreCompactsIntoASnapshot(t *testing.T) {
	d := storage.NewSimDisk()
	s, err := openStore(d, []uint64{1})
	require.NoError(t, err)
	require.NoError(t, s.save(raft.Ready{Entries: entries(2, 2, 30)}))
	require.NoError(t, s.compact(20, &pb.ConfState{Voters: []uint64{1}}, []byte("image")))
	s, err = openStore(d, []uint64{1})
	require.NoError(t, err)
	first, err := s.mem.FirstIndex()
	require.NoError(t, err)
	assert.Equal(t, uint64(21), first)
	assert.Equal(t, uint64(30), lastIndex(t, s))
	snap, err := s.mem.Snapshot()
	require.NoError(t, err)
	assert.Equal(t, []byte("image"), snap.GetData())
}

func TestStoreRefusesALogOfOtherVoters(t *testing.T) {
	d := storage.NewSimDisk()
	_, err := openStore(d, []uint64{1, 2, 3})
	require.NoError(t, err)
	_, err = openStore(d, []uint64{1})
	require.ErrorContains(t, err, "names voters [1 2 3]")
}
