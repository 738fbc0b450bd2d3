package linearizability

import (
	"bytes"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// logPart adds a partition log's operations to b: an acknowledged acks=all
// write of a at offset 0 and a read of it, or, when broken, a read that
// finds another record there.
func logPart(b *linHistory, broken bool) {
	b.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
	read := "a"
	if broken {
		read = "x"
	}
	b.fetch(1, 6, 7, 0, 1, read)
}

// groupPart adds group g's operations to b: two accepted commits of t-0
// and a fetch after both that sees the last, or, when broken, the first.
func groupPart(b *linHistory, broken bool) {
	b.join(2, "m1", 1, 0, 1)
	b.commit(2, "m1", 1, 10, 2, 3, OutcomeOK)
	b.commit(2, "m1", 1, 20, 4, 5, OutcomeOK)
	fetched := int64(20)
	if broken {
		fetched = 10
	}
	b.offsetFetch(3, fetched, 8, 9)
}

// Each model judges its own concern alone: on a history with a fault in the
// logs only the log model fires, with one in a group's committed offsets
// only the group model, and neither on a correct history. The verdict on
// the whole history is illegal when either fires, and names the partition.
func TestEachModelFiresOnItsConcern(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	for _, c := range []struct {
		name               string
		logFault, grpFault bool
		want               Verdict
	}{
		{"correct", false, false, VerdictOK},
		{"log fault", true, false, VerdictIllegal},
		{"group fault", false, true, VerdictIllegal},
		{"both faults", true, true, VerdictIllegal},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b linHistory
			logPart(&b, c.logFault)
			groupPart(&b, c.grpFault)
			require.NoError(t, Validate(b.ops))

			ops, parts, unread := toOperations(b.ops)
			require.Len(t, parts, 1)
			assert.Equal(t, !c.logFault, porcupine.CheckOperations(logModel(len(parts), unread), ops), "log model")
			gops, gparts := toGroupOperations(b.ops, 0)
			require.Len(t, gparts, 1)
			assert.Equal(t, !c.grpFault, porcupine.CheckOperations(groupModel(len(gparts)), gops), "group model")

			res := b.check(t)
			assert.Equal(t, c.want, res.Verdict)
			verdict := func(fault bool) Verdict {
				if fault {
					return VerdictIllegal
				}
				return VerdictOK
			}
			assert.Equal(t, []PartitionVerdict{
				{TP: tp, Ops: 2, Verdict: verdict(c.logFault)},
				{Group: "g", TP: tp, Ops: 4, Verdict: verdict(c.grpFault)},
			}, res.Partitions)
			assert.Len(t, res.LogInfo.PartialLinearizations(), 1)
			assert.Len(t, res.GroupInfo.PartialLinearizations(), 1)
		})
	}
}

// A history of one concern only is checked by that concern's model alone:
// the other search has nothing to do and holds no partition.
func TestOneConcernOnly(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	for _, broken := range []bool{false, true} {
		want := VerdictOK
		if broken {
			want = VerdictIllegal
		}

		var logs linHistory
		logPart(&logs, broken)
		res := logs.check(t)
		assert.Equal(t, want, res.Verdict, "logs only, broken %v", broken)
		assert.Equal(t, []PartitionVerdict{{TP: tp, Ops: 2, Verdict: want}}, res.Partitions)
		assert.Len(t, res.LogInfo.PartialLinearizations(), 1)
		assert.Empty(t, res.GroupInfo.PartialLinearizations())

		var groups linHistory
		groupPart(&groups, broken)
		res = groups.check(t)
		assert.Equal(t, want, res.Verdict, "groups only, broken %v", broken)
		assert.Equal(t, []PartitionVerdict{{Group: "g", TP: tp, Ops: 4, Verdict: want}}, res.Partitions)
		assert.Empty(t, res.LogInfo.PartialLinearizations())
		assert.Len(t, res.GroupInfo.PartialLinearizations(), 1)
		html := drawn(t, res)
		contains(t, html, "group g t-0: commit 20 gen 1 m1 → ok")
		contains(t, html, "op 1, client 2, group g, t-0")
	}
}

// The verdict on a history is illegal if either search is, else unknown if
// either ran out of time, else ok.
func TestMergeVerdicts(t *testing.T) {
	ok, illegal, unknown := porcupine.Ok, porcupine.Illegal, porcupine.Unknown
	for _, c := range []struct {
		log, group porcupine.CheckResult
		want       Verdict
	}{
		{ok, ok, VerdictOK},
		{ok, illegal, VerdictIllegal},
		{illegal, ok, VerdictIllegal},
		{illegal, illegal, VerdictIllegal},
		{ok, unknown, VerdictUnknown},
		{unknown, ok, VerdictUnknown},
		{unknown, unknown, VerdictUnknown},
		{unknown, illegal, VerdictIllegal},
		{illegal, unknown, VerdictIllegal},
	} {
		assert.Equal(t, c.want, mergeVerdicts(c.log, c.group), "log %s, group %s", c.log, c.group)
	}
}

// A search of the logs cut short by the timeout leaves the history unknown,
// though the groups' search passed.
func TestOneSearchTimedOutIsUnknown(t *testing.T) {
	b := linHistory{ops: hardHistory(40)}
	groupPart(&b, false)
	require.NoError(t, Validate(b.ops))
	res := CheckLinearizability(b.ops, 50*time.Millisecond)
	assert.Equal(t, VerdictUnknown, res.Verdict)
	require.Len(t, res.Partitions, 2)
	assert.Equal(t, VerdictUnknown, res.Partitions[0].Verdict)
	assert.Less(t, res.Elapsed, 5*time.Second, "the timeout must stop the search")
}

// The picture of a history with both log and group operations draws the
// partitions of both searches, the logs' first, on one timeline, with the
// annotations; the failing search's partial linearization is in it.
func TestWriteVisualizationBothConcerns(t *testing.T) {
	var b linHistory
	logPart(&b, false)
	groupPart(&b, true)
	res := b.check(t)
	require.Equal(t, VerdictIllegal, res.Verdict)

	html := drawn(t, res)
	contains(t, html, "produce a acks=all → ok @0")
	contains(t, html, "op 1, client 1, t-0")
	contains(t, html, "group g t-0: offset-fetch → 10")
	contains(t, html, "op 5, client 3, group g, t-0")
	contains(t, html, `"StateDescription":"generation 1, committed 20"`)

	prefix, suffix, err := pageFrame(res.logModel)
	require.NoError(t, err)
	d, err := readPage(html, prefix, suffix)
	require.NoError(t, err)
	require.Len(t, d.Partitions, 2)
	assert.Len(t, d.Partitions[0].History, 2)
	assert.Len(t, d.Partitions[1].History, 4)
	assert.Len(t, d.Annotations, len(testNotes))
	// One timeline: the fetch of t-0 (6 to 7) and the group's join (0 to
	// 1) and offset-fetch (8 to 9) keep their order across partitions.
	fetch, join, offsetFetch := d.Partitions[0].History[1], d.Partitions[1].History[0], d.Partitions[1].History[3]
	assert.Equal(t, "6", fetch.OriginalStart)
	assert.Less(t, join.End, fetch.Start)
	assert.Less(t, fetch.End, offsetFetch.Start)
	// The crash annotation (4 to 12) spans them.
	assert.Less(t, d.Annotations[0].Start, fetch.Start)
	assert.Greater(t, d.Annotations[0].End, offsetFetch.End)
}

// Merging is exact: the merged page of one search is porcupine's own page
// of it, byte for byte.
func TestMergePicturesOfOneIsPorcupines(t *testing.T) {
	for name, b := range map[string]func(*linHistory){
		"logs":   func(b *linHistory) { logPart(b, true) },
		"groups": func(b *linHistory) { groupPart(b, true) },
	} {
		var h linHistory
		b(&h)
		res := h.check(t)
		p := picture{res.logModel, res.LogInfo}
		if name == "groups" {
			p = picture{res.groupModel, res.GroupInfo}
		}
		var own, merged bytes.Buffer
		require.NoError(t, drawPicture(&own, p, testNotes))
		require.NoError(t, mergePictures(&merged, []picture{p}, porcupineAnnotations(testNotes)))
		assert.True(t, own.String() == merged.String(), "%s: the merged page differs from porcupine's", name)
	}
}

// A page porcupine did not draw is refused, not misread.
func TestReadPageRefusesAnUnknownPage(t *testing.T) {
	_, err := readPage("<!doctype html>", "<!doctype html><script>const data = ", "</script>")
	assert.ErrorIs(t, err, errPageChanged)
	_, err = readPage(`pre{"Partitions":[],"Extra":1}post`, "pre", "post")
	assert.ErrorIs(t, err, errPageChanged)
}
