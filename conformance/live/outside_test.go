package live

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/linearizability"
)

// A produce the broker refused whose record a reader then saw was
// appended before the refusal; a client timeout, a record nobody read,
// or a value sent twice, says nothing.
func TestRefusedAfterAppendSeenFromOutside(t *testing.T) {
	produce := func(v string, o linearizability.Outcome, code int16) linearizability.Op {
		return linearizability.Op{Kind: linearizability.KindProduce, Value: v, Outcome: o, Code: code, Offset: -1}
	}
	read := linearizability.Op{Kind: linearizability.KindFetch, Outcome: linearizability.OutcomeOK,
		Records: []linearizability.Record{{Offset: 0, Value: "a"}, {Offset: 1, Value: "b"}, {Offset: 2, Value: "c"}, {Offset: 3, Value: "d"}}}
	quiet := []linearizability.Op{
		produce("a", linearizability.OutcomeOK, 0),
		produce("b", linearizability.OutcomeUnknown, 0), // the client's own timeout
		produce("c", linearizability.OutcomeUnknown, 7), // refused, then sent again
		produce("c", linearizability.OutcomeOK, 0),
		produce("e", linearizability.OutcomeFail, 6), // refused, never read
		read,
	}
	l := &live{}
	l.History = quiet
	l.noteRefusedAfterAppend()
	require.Zero(t, l.Situations[run.SitRefusedAfterAppend])

	l.History = append(quiet, produce("d", linearizability.OutcomeUnknown, 7))
	l.noteRefusedAfterAppend()
	require.Equal(t, 1, l.Situations[run.SitRefusedAfterAppend])
}

// A leader of a newer epoch reporting a HW below an older epoch's is
// behind the committed HW; an ISR seen growing in that epoch, by one
// broker's successive answers, before a fetch that still found the HW
// behind, grew inside the gap. Growth seen by comparing two brokers'
// answers, or a fetch sent before the growth was seen, proves nothing.
func TestHWGapSeenFromOutside(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "t"}
	fetch := func(epoch int32, hw, sentAt int64) answer {
		return answer{env: clientmsg.Envelope{From: 1, Msg: clientmsg.FetchResponse{TopicPartition: tp, HW: hw}},
			req: clientmsg.FetchRequest{TopicPartition: tp, CurrentLeaderEpoch: epoch}, sentAt: sentAt}
	}
	meta := func(epoch int32, isr ...int32) clientmsg.MetadataResponse {
		return clientmsg.MetadataResponse{Partitions: []kafka.PartitionState{{TopicPartition: tp, Leader: 2, LeaderEpoch: epoch, ISR: isr}}}
	}
	l := &live{}
	l.noteHW(fetch(1, 10, 0))
	l.noteHW(fetch(1, 8, 0)) // an older answer of the same epoch
	require.Zero(t, l.Situations[run.SitNewLeaderHWBehind])
	l.noteHW(fetch(2, 10, 0))
	require.Zero(t, l.Situations[run.SitNewLeaderHWBehind], "caught up")

	l.Now = 100
	l.noteISRGrowth(2, meta(3, 2))
	l.noteISRGrowth(1, meta(3, 2, 3)) // another broker's view: not compared
	l.noteHW(fetch(3, 7, 50))
	require.Equal(t, 1, l.Situations[run.SitNewLeaderHWBehind])
	l.noteHW(fetch(3, 8, 60))
	require.Equal(t, 1, l.Situations[run.SitNewLeaderHWBehind], "once per epoch")
	require.Zero(t, l.Situations[run.SitExpandWhileHWBehind])

	l.Now = 200
	l.noteISRGrowth(2, meta(3, 2, 3))
	l.noteHW(fetch(3, 9, 150)) // sent before the growth was seen
	require.Zero(t, l.Situations[run.SitExpandWhileHWBehind])
	l.noteHW(fetch(3, 9, 200))
	require.Equal(t, 1, l.Situations[run.SitExpandWhileHWBehind])
	l.noteHW(fetch(3, 11, 300))
	l.noteHW(fetch(3, 9, 300))
	require.Equal(t, 1, l.Situations[run.SitExpandWhileHWBehind])
}
