package linearizability

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// processHistory: a record written at offsets 0..2 of t-0, read back by a
// member of group g, which commits after processing (at-least-once).
func processHistory() []Op {
	return []Op{
		{ID: 0, Client: 1, Kind: KindProduce, Topic: "t", Value: "a", Acks: -1, Offset: 0, Call: 0, Return: 1, Outcome: OutcomeOK},
		{ID: 1, Client: 1, Kind: KindProduce, Topic: "t", Value: "b", Acks: -1, Offset: 1, Call: 1, Return: 2, Outcome: OutcomeOK},
		{ID: 2, Client: 1, Kind: KindProduce, Topic: "t", Value: "c", Acks: -1, Offset: 2, Call: 2, Return: 3, Outcome: OutcomeOK},
		{ID: 3, Client: 2, Kind: KindFetch, Topic: "t", Offset: 0, Call: 4, Return: 5, Outcome: OutcomeOK, HW: 3,
			Records: []Record{{0, "a"}, {1, "b"}, {2, "c"}}},
		{ID: 4, Client: 2, Kind: KindProcess, Group: "g", Topic: "t", Offset: 0, Value: "a", Call: 6, Return: 6, Outcome: OutcomeOK},
		{ID: 5, Client: 2, Kind: KindProcess, Group: "g", Topic: "t", Offset: 1, Value: "b", Call: 7, Return: 7, Outcome: OutcomeOK},
		{ID: 6, Client: 2, Kind: KindCommit, Group: "g", Generation: 1, Member: "m1", Topic: "t", Offset: 2, Call: 8, Return: 9, Outcome: OutcomeOK},
	}
}

func processNames(as []Anomaly) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Name)
	}
	return out
}

func TestProcessingCleanHistoryHasNoAnomaly(t *testing.T) {
	h := processHistory()
	require.NoError(t, Validate(h))
	require.Empty(t, CheckAnomalies(h))
}

func TestReprocessedIsFound(t *testing.T) {
	h := processHistory()
	// A second member processes "b" again after a rebalance.
	h = append(h, Op{ID: 7, Client: 3, Kind: KindProcess, Group: "g", Topic: "t", Offset: 1, Value: "b", Call: 10, Return: 10, Outcome: OutcomeOK})
	require.NoError(t, Validate(h))
	as := CheckAnomalies(h)
	require.Equal(t, []string{AnomalyReprocessed}, processNames(as))
	require.Equal(t, []int{5, 7}, as[0].Ops)
	require.Equal(t, int64(1), as[0].Offset)

	// Another group processing the same record is no reprocessing.
	h[7].Group = "other"
	require.Empty(t, CheckAnomalies(h))
}

func TestUnprocessedIsFound(t *testing.T) {
	h := processHistory()
	// Committed past "b" without processing it: the gap at-most-once allows.
	h[5].Kind, h[5].Group, h[5].Value, h[5].Offset = KindListOffsets, "", "", 3
	require.NoError(t, Validate(h))
	as := CheckAnomalies(h)
	require.Equal(t, []string{AnomalyUnprocessed}, processNames(as))
	require.Equal(t, int64(1), as[0].Offset)
	require.Equal(t, "b", as[0].Value)
	require.Equal(t, []int{6, 3}, as[0].Ops)

	// Below the committed offset only: "c" at 2 is not committed yet.
	h = processHistory()
	h[6].Offset = 1
	h[5].Kind, h[5].Group, h[5].Value, h[5].Offset = KindListOffsets, "", "", 3
	require.Empty(t, CheckAnomalies(h))

	// A failed commit commits nothing.
	h = processHistory()
	h[5].Kind, h[5].Group, h[5].Value, h[5].Offset = KindListOffsets, "", "", 3
	h[6].Outcome, h[6].Error = OutcomeFail, "ILLEGAL_GENERATION"
	require.Empty(t, CheckAnomalies(h))
}

// A record below a log start a fetch reported may have been deleted by
// retention before the group read it: not unprocessed. One above it is.
func TestUnprocessedSkipsWhatRetentionDeleted(t *testing.T) {
	h := []Op{
		{ID: 0, Kind: KindFetch, Topic: "t", Outcome: OutcomeOK, Offset: 0, Records: []Record{{Offset: 0, Value: "a"}, {Offset: 1, Value: "b"}, {Offset: 2, Value: "c"}}},
		{ID: 1, Kind: KindFetch, Topic: "t", Outcome: OutcomeOK, Offset: 2, LogStart: 2, Records: []Record{{Offset: 2, Value: "c"}}},
		{ID: 2, Kind: KindProcess, Group: "g", Topic: "t", Offset: 2, Value: "c"},
		{ID: 3, Kind: KindCommit, Group: "g", Topic: "t", Offset: 3, Outcome: OutcomeOK},
	}
	require.Empty(t, processNames(checkProcessing(h)), "offsets 0 and 1 were deleted before the group read them")
	h[1].LogStart = 1
	require.Equal(t, []string{AnomalyUnprocessed}, processNames(checkProcessing(h)), "offset 1 was not deleted")
}
