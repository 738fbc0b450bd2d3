package report

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// TestTimelineMarksUncleanElections: a timeline shows the faults first, in
// time order, and a partition's leadership with an unclean election
// marked, from the run's notes.
func TestTimelineMarksUncleanElections(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	notes := []run.Note{
		{AtMs: 10, Kind: run.NoteFault, Fault: run.FaultIsolate, Node: 1, Text: "isolate broker 1"},
		run.ISRNote(tp, []int32{1, 2}, []int32{1}, 3),
		{AtMs: 30, Kind: run.NoteFault, Fault: run.FaultCrash, Node: 1, Text: "crash broker 1 (scheduled)"},
		run.ElectionNote(tp, 2, 5, true),
	}
	notes[1].AtMs, notes[3].AtMs = 20, 40
	r := &judge.RunResult{Case: "x", Seed: 3, Verdict: judge.Violated, Run: &run.Result{Notes: notes, Stats: run.Stats{EndMs: 100}}}
	var b strings.Builder
	require.NoError(t, writeTimeline(&b, r))
	text := b.String()
	assert.Contains(t, text, "UNCLEAN")
	assert.Contains(t, text, "40 .. 100")
	assert.Contains(t, text, "the initial leader")
	// The fault list comes first, in time order.
	assert.Less(t, strings.Index(text, "isolate broker 1"), strings.Index(text, "crash broker 1"))
	assert.Less(t, strings.Index(text, "crash broker 1"), strings.Index(text, "partition t-0"))
}
