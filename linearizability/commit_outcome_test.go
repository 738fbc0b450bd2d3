package linearizability

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Commit outcomes as Kafka 4.x answers them. Its coordinator appends a
// commit with acks=1 and answers once the high watermark passes it; a
// commit whose write outlives offsets.commit.timeout.ms is answered
// COORDINATOR_NOT_AVAILABLE, and its record may commit anyway. Each
// history in testdata/commit-outcomes is one member (m1, generation 1 of
// group g) committing t-0: offset 10 accepted (op 2), then another offset
// (op 3), then an offset-fetch (op 4):
//
//	unavailable-committed            op 3 (20) COORDINATOR_NOT_AVAILABLE, unknown; the fetch shows 20
//	unavailable-recorded-fail        the same, recorded as fail with code 15 by a harness
//	                                 that trusted the error: judged unknown all the same
//	unavailable-recorded-fail-lower  op 3 (5) as in the last, after a seek back; the fetch shows 5
//	unavailable-not-committed        op 3 (20) as in the first; the fetch shows 10
//	unavailable-then-nothing         op 3 (20) as in the first; the fetch shows nothing: op 2 is lost
//	accepted-lost                    op 3 (20) accepted; the fetch shows 10: op 3 is lost
//	refused-fetched                  op 3 (20) refused with REBALANCE_IN_PROGRESS; the fetch shows 20
//	refused-lower-fetched            op 3 (5) so refused; the fetch shows 5: op 2 is lost
//
// A correct Kafka 4.x may write the first four; the others are violations
// both checkers must still find (the porcupine model alone for
// refused-fetched: no named anomaly covers a refused commit seen).
// Reference: Kafka 4.x CoordinatorOperationExceptionHelper.handleOperationException
// (REQUEST_TIMED_OUT answered as COORDINATOR_NOT_AVAILABLE),
// CoordinatorPartitionWriter.append (acks=1), CoordinatorRuntime (answers
// deferred until the high watermark passes the write).
func TestCommitOutcomesAsKafka4Answers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		anomalies []string // anomaly names, with the offset each is at
		offsets   []int64
		verdict   Verdict
	}{
		{"unavailable-committed", nil, nil, VerdictOK},
		{"unavailable-recorded-fail", nil, nil, VerdictOK},
		{"unavailable-recorded-fail-lower", nil, nil, VerdictOK},
		{"unavailable-not-committed", nil, nil, VerdictOK},
		// The accepted commit a fetch must reflect is op 2, never the
		// unknown op 3.
		{"unavailable-then-nothing", []string{AnomalyLostCommit}, []int64{10}, VerdictIllegal},
		{"accepted-lost", []string{AnomalyLostCommit}, []int64{20}, VerdictIllegal},
		{"refused-fetched", nil, nil, VerdictIllegal},
		{"refused-lower-fetched", []string{AnomalyLostCommit}, []int64{10}, VerdictIllegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "commit-outcomes", tc.name+".jsonl"))
			require.NoError(t, err)
			defer f.Close()
			h, err := ReadHistory(f)
			require.NoError(t, err)
			var names []string
			var offsets []int64
			for _, a := range CheckAnomalies(h) {
				names, offsets = append(names, a.Name), append(offsets, a.Offset)
			}
			require.Equal(t, tc.anomalies, names)
			require.Equal(t, tc.offsets, offsets)
			res := CheckLinearizability(h, 10*time.Second)
			require.Equal(t, tc.verdict, res.Verdict)
		})
	}
}

// judgedOutcome reads a failed commit's code: the codes after which the
// offsets may have been stored make it unknown, any other code, and any
// other kind of operation, keep the outcome recorded.
func TestJudgedOutcome(t *testing.T) {
	for _, tc := range []struct {
		op   Op
		want Outcome
	}{
		{Op{Kind: KindCommit, Outcome: OutcomeFail, Code: 15}, OutcomeUnknown}, // COORDINATOR_NOT_AVAILABLE
		{Op{Kind: KindCommit, Outcome: OutcomeFail, Code: 16}, OutcomeUnknown}, // NOT_COORDINATOR
		{Op{Kind: KindCommit, Outcome: OutcomeFail, Code: 7}, OutcomeUnknown},  // REQUEST_TIMED_OUT
		{Op{Kind: KindCommit, Outcome: OutcomeFail, Code: 20}, OutcomeUnknown}, // NOT_ENOUGH_REPLICAS_AFTER_APPEND
		{Op{Kind: KindCommit, Outcome: OutcomeFail, Code: 22}, OutcomeFail},    // ILLEGAL_GENERATION
		{Op{Kind: KindCommit, Outcome: OutcomeFail, Code: 14}, OutcomeFail},    // COORDINATOR_LOAD_IN_PROGRESS
		{Op{Kind: KindCommit, Outcome: OutcomeFail}, OutcomeFail},              // the client's own error
		{Op{Kind: KindCommit, Outcome: OutcomeOK}, OutcomeOK},
		{Op{Kind: KindProduce, Outcome: OutcomeFail, Code: 7}, OutcomeFail},
	} {
		require.Equal(t, tc.want, judgedOutcome(&tc.op), "%+v", tc.op)
	}
}
