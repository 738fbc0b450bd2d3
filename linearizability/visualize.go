package linearizability

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/anishathalye/porcupine"
)

// AnnotationKind says what an annotation marks; it picks the annotation's
// row and colour in the picture.
type AnnotationKind string

// Annotation kinds.
const (
	// AnnotationFault: a fault injected by the nemesis (crash, power loss,
	// pause, partition, dropped or delayed messages).
	AnnotationFault AnnotationKind = "fault"
	// AnnotationHeal: the nemesis healing a fault.
	AnnotationHeal AnnotationKind = "heal"
	// AnnotationFailpoint: a failpoint that fired.
	AnnotationFailpoint AnnotationKind = "failpoint"
	// AnnotationElection: a leader election or another controller decision.
	AnnotationElection AnnotationKind = "election"
)

// Annotation marks a span of the run in the picture, next to the clients'
// operations: what the harness did to the cluster, and when.
type Annotation struct {
	// Start and End are in the history's time unit; an End before Start
	// marks the instant Start.
	Start, End int64
	Kind       AnnotationKind
	// Label is shown in the picture, Detail when the mouse is over it.
	Label, Detail string
}

// annotationStyle is where and how an annotation kind is drawn.
type annotationStyle struct {
	row        string // porcupine's tag: one row per tag, under the clients
	text, fill string // CSS colours
}

// styleOf picks an annotation kind's row and colours; kinds this file does
// not know get a grey row named after the kind.
func styleOf(kind AnnotationKind) annotationStyle {
	switch kind {
	case AnnotationFault:
		return annotationStyle{row: "nemesis", text: "#721c24", fill: "#f5c6cb"}
	case AnnotationHeal:
		return annotationStyle{row: "nemesis", text: "#155724", fill: "#c3e6cb"}
	case AnnotationFailpoint:
		return annotationStyle{row: "failpoints", text: "#856404", fill: "#ffeeba"}
	case AnnotationElection:
		return annotationStyle{row: "controller", text: "#0c5460", fill: "#bee5eb"}
	case "":
		return annotationStyle{row: "other", text: "#383d41", fill: "#d6d8db"}
	default:
		return annotationStyle{row: string(kind), text: "#383d41", fill: "#d6d8db"}
	}
}

// ErrNoResult is returned when asked to draw a result that
// CheckLinearizability did not produce.
var ErrNoResult = errors.New("no linearizability result to draw")

// WriteVisualization writes porcupine's HTML picture of a checked history
// to w: every partition's operations on their clients' rows, the
// linearization found (or the longest partial ones and where they fail),
// and the annotations on rows of their own below the clients. A history
// with both log and group operations was checked by two searches
// (CheckLinearizability); its picture holds the partitions of both, the
// logs' first, on one timeline (mergePictures).
func WriteVisualization(w io.Writer, res LinearizabilityResult, notes []Annotation) error {
	if res.logModel.Init == nil {
		return ErrNoResult
	}
	var pictures []picture
	for _, p := range []picture{{res.logModel, res.LogInfo}, {res.groupModel, res.GroupInfo}} {
		if len(p.info.PartialLinearizations()) > 0 {
			pictures = append(pictures, p)
		}
	}
	var err error
	switch len(pictures) {
	case 0: // no operations: the annotations alone
		err = drawPicture(w, picture{res.logModel, res.LogInfo}, notes)
	case 1:
		err = drawPicture(w, pictures[0], notes)
	default:
		err = mergePictures(w, pictures, porcupineAnnotations(notes))
	}
	if err != nil {
		return fmt.Errorf("write linearizability picture: %w", err)
	}
	return nil
}

// picture is one porcupine search to draw: its model, and its record.
type picture struct {
	model porcupine.Model
	info  porcupine.LinearizationInfo
}

// drawPicture writes porcupine's own picture of p, with notes.
func drawPicture(w io.Writer, p picture, notes []Annotation) error {
	info := p.info // a copy: the result stays as it was
	info.AddAnnotations(porcupineAnnotations(notes))
	return porcupine.Visualize(p.model, info, w)
}

// WriteVisualizationFile writes the picture WriteVisualization draws to a
// file at path.
func WriteVisualizationFile(path string, res LinearizabilityResult, notes []Annotation) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write linearizability picture: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write linearizability picture %s: %w", path, cerr)
		}
	}()
	return WriteVisualization(f, res, notes)
}

func porcupineAnnotations(notes []Annotation) []porcupine.Annotation {
	out := make([]porcupine.Annotation, 0, len(notes))
	for _, n := range notes {
		style := styleOf(n.Kind)
		end := max(n.End, n.Start)
		details := fmt.Sprintf("%s, %d–%d", n.Kind, n.Start, end)
		if n.Detail != "" {
			details = n.Detail + " (" + details + ")"
		}
		out = append(out, porcupine.Annotation{
			Tag:             style.row,
			Start:           n.Start,
			End:             end,
			Description:     n.Label,
			Details:         details,
			TextColor:       style.text,
			BackgroundColor: style.fill,
		})
	}
	return out
}
