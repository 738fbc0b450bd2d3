package linearizability

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testNotes = []Annotation{
	{Start: 4, End: 12, Kind: AnnotationFault, Label: "crash broker 1", Detail: "power loss: unsynced writes lost"},
	{Start: 12, Kind: AnnotationHeal, Label: "restart broker 1"},
	{Start: 7, Kind: AnnotationFailpoint, Label: "afterAppendBeforeAck", Detail: "1*return(crash)"},
	{Start: 9, End: 10, Kind: AnnotationElection, Label: "broker 2 leads t-0, epoch 3"},
	{Start: 11, Kind: "clock", Label: "skew +5ms"},
}

// contains checks for text in a picture without printing the picture, which
// is mostly porcupine's JavaScript, when it is missing.
func contains(t *testing.T, html, text string, msgAndArgs ...any) {
	t.Helper()
	assert.True(t, strings.Contains(html, text), append([]any{"picture lacks %q", text}, msgAndArgs...)...)
}

func drawn(t *testing.T, res LinearizabilityResult) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, WriteVisualization(&buf, res, testNotes))
	html := buf.String()
	require.NotEmpty(t, html)
	assert.True(t, strings.HasPrefix(html, "<!doctype html>"))
	for _, n := range testNotes {
		contains(t, html, n.Label)
		if n.Detail != "" {
			contains(t, html, n.Detail)
		}
	}
	for _, row := range []string{`"Tag":"nemesis"`, `"Tag":"failpoints"`, `"Tag":"controller"`, `"Tag":"clock"`} {
		contains(t, html, row)
	}
	contains(t, html, `"BackgroundColor":"#f5c6cb"`)
	return html
}

// The picture is drawn for a linearizable history, with the nemesis's
// actions on rows of their own, and every partition's operations.
func TestWriteVisualizationOK(t *testing.T) {
	var b linHistory
	b.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
	b.fetch(1, 6, 8, 0, 1, "a")
	b.produce(0, "b", acksAll, 1, 6, OutcomeOK, 0).Partition = 1
	res := b.check(t)
	require.Equal(t, VerdictOK, res.Verdict)

	html := drawn(t, res)
	contains(t, html, "t-0: produce a acks=all → ok @0")
	contains(t, html, "t-1: produce b acks=all → ok @0")
	contains(t, html, "op 1, client 1, t-0") // metadata ties the picture to the history
}

// The picture is drawn for an illegal history too: that is when it is read.
// Reference: spec/SEMANTICS.md, Known bugs, KIP-101 data loss.
func TestWriteVisualizationIllegal(t *testing.T) {
	var b linHistory
	b.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
	b.produce(0, "m2", acksAll, 6, 8, OutcomeOK, 1)
	b.produce(1, "m3", 1, 13, 14, OutcomeOK, 1)
	b.fetch(2, 15, 16, 0, 2, "a", "m3")
	res := b.check(t)
	require.Equal(t, VerdictIllegal, res.Verdict)

	html := drawn(t, res)
	contains(t, html, "fetch @0 → [0:a 1:m3] hw 2")
	// The longest partial linearization, with its states; m2 was never
	// read, so the model knows it only as "?".
	contains(t, html, `"PartialLinearizations":[[{"Index":0,"StateDescription":"len 1 [0:a]"},{"Index":1,"StateDescription":"len 2 [0:a 1:?]"}]]`)
}

func TestWriteVisualizationFile(t *testing.T) {
	var b linHistory
	b.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
	res := b.check(t)
	path := filepath.Join(t.TempDir(), "linearizability.html")
	require.NoError(t, WriteVisualizationFile(path, res, testNotes))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	contains(t, string(data), "crash broker 1")

	assert.Error(t, WriteVisualizationFile(filepath.Join(t.TempDir(), "missing", "x.html"), res, nil))
}

// A result that did not come from CheckLinearizability cannot be drawn.
func TestWriteVisualizationNeedsResult(t *testing.T) {
	var buf bytes.Buffer
	assert.ErrorIs(t, WriteVisualization(&buf, LinearizabilityResult{}, nil), ErrNoResult)
}

// Drawing leaves the result as it was, so it can be drawn again with other
// annotations.
func TestWriteVisualizationKeepsResult(t *testing.T) {
	var b linHistory
	b.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
	res := b.check(t)
	var first, second bytes.Buffer
	require.NoError(t, WriteVisualization(&first, res, testNotes))
	require.NoError(t, WriteVisualization(&second, res, nil))
	contains(t, first.String(), "crash broker 1")
	assert.False(t, strings.Contains(second.String(), "crash broker 1"))
}
