package linearizability

// One picture of two porcupine searches. porcupine draws one search (a
// model and its LinearizationInfo) per page and cannot join two records;
// but its page is a fixed frame around the JSON of what it draws, so the
// partitions of two pages can be joined into one.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
)

// errPageChanged is returned when porcupine's page is not the frame and
// data mergePictures knows: porcupine was upgraded, and pageData needs its
// new form.
var errPageChanged = errors.New("porcupine's picture is not in the form this package knows")

// pageData is what porcupine's page draws, in the JSON its script reads:
// the partitions, then the annotations. Its fields are porcupine's (v1.3.1,
// visualization.go), in porcupine's order.
type pageData struct {
	Partitions  []pagePartition
	Annotations []pageAnnotation
}

// pagePartition is one partition of a page: its operations, indexed by
// their place in History, and the partial linearizations found.
type pagePartition struct {
	History               []pageOperation
	PartialLinearizations [][]pageStep
	Largest               map[int]int
}

// pageOperation is an operation in the picture. Start and End are
// porcupine's compressed times (pageTimes); OriginalStart and OriginalEnd
// the history's.
type pageOperation struct {
	ClientID      int `json:"ClientId"`
	Start         int
	OriginalStart string
	End           int
	OriginalEnd   string
	Description   string
	Metadata      string
}

// pageStep is one step of a partial linearization.
type pageStep struct {
	Index            int
	StateDescription string
}

// pageAnnotation is an annotation in the picture, at compressed times.
type pageAnnotation struct {
	ClientID        int `json:"ClientId"`
	Tag             string
	Start           int
	End             int
	Description     string
	Details         string
	Annotation      bool
	TextColor       string
	BackgroundColor string
}

// mergePictures writes one porcupine page that draws the partitions of
// every picture, in order, and notes, on one timeline: the page porcupine
// would draw of one search holding them all.
func mergePictures(w io.Writer, pictures []picture, notes []porcupine.Annotation) error {
	prefix, suffix, err := pageFrame(pictures[0].model)
	if err != nil {
		return err
	}
	merged := pageData{Partitions: []pagePartition{}}
	for _, p := range pictures {
		var page bytes.Buffer
		if err := porcupine.Visualize(p.model, p.info, &page); err != nil {
			return err
		}
		d, err := readPage(page.String(), prefix, suffix)
		if err != nil {
			return err
		}
		merged.Partitions = append(merged.Partitions, d.Partitions...)
	}
	if err := merged.retime(notes); err != nil {
		return err
	}
	data, err := json.Marshal(merged)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, prefix+string(data)+suffix)
	return err
}

// pageFrame returns porcupine's page around its data: what comes before it
// and what after. They are the same on every page; they are read off the
// page of an empty record.
func pageFrame(model porcupine.Model) (prefix, suffix string, err error) {
	var page bytes.Buffer
	if err := porcupine.Visualize(model, porcupine.LinearizationInfo{}, &page); err != nil {
		return "", "", err
	}
	empty, err := json.Marshal(pageData{Partitions: []pagePartition{}, Annotations: []pageAnnotation{}})
	if err != nil {
		return "", "", err
	}
	s := page.String()
	i := strings.LastIndex(s, string(empty))
	if i < 0 {
		return "", "", errPageChanged
	}
	return s[:i], s[i+len(empty):], nil
}

// readPage returns the data of porcupine's page, framed by prefix and
// suffix; a field it does not know is an error, not a loss.
func readPage(page, prefix, suffix string) (pageData, error) {
	var d pageData
	if !strings.HasPrefix(page, prefix) || !strings.HasSuffix(page, suffix) || len(page) < len(prefix)+len(suffix) {
		return d, errPageChanged
	}
	dec := json.NewDecoder(strings.NewReader(page[len(prefix) : len(page)-len(suffix)]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return d, fmt.Errorf("%w: %w", errPageChanged, err)
	}
	return d, nil
}

// retime sets d's annotations to notes and puts every operation and
// annotation on one timeline, as porcupine does for one page
// (timestampMapping): each distinct time of the history, an operation's
// call or return or an annotation's start or end, becomes 100 times its
// rank among them.
func (d *pageData) retime(notes []porcupine.Annotation) error {
	var times []int64
	for _, p := range d.Partitions {
		for _, o := range p.History {
			start, err := strconv.ParseInt(o.OriginalStart, 10, 64)
			if err != nil {
				return fmt.Errorf("%w: %w", errPageChanged, err)
			}
			end, err := strconv.ParseInt(o.OriginalEnd, 10, 64)
			if err != nil {
				return fmt.Errorf("%w: %w", errPageChanged, err)
			}
			times = append(times, start, end)
		}
	}
	for _, n := range notes {
		times = append(times, n.Start, max(n.End, n.Start))
	}
	slices.Sort(times)
	times = slices.Compact(times)
	at := func(t int64) int {
		i, _ := slices.BinarySearch(times, t)
		return 100 * i
	}
	for _, p := range d.Partitions {
		for i := range p.History {
			o := &p.History[i]
			start, _ := strconv.ParseInt(o.OriginalStart, 10, 64)
			end, _ := strconv.ParseInt(o.OriginalEnd, 10, 64)
			o.Start, o.End = at(start), at(end)
		}
	}
	d.Annotations = make([]pageAnnotation, len(notes))
	for i, n := range notes {
		d.Annotations[i] = pageAnnotation{
			ClientID:        n.ClientId,
			Tag:             n.Tag,
			Start:           at(n.Start),
			End:             at(max(n.End, n.Start)),
			Description:     n.Description,
			Details:         n.Details,
			Annotation:      true,
			TextColor:       n.TextColor,
			BackgroundColor: n.BackgroundColor,
		}
	}
	return nil
}
