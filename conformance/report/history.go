package report

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"

	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/linearizability"
)

// writeHistoryPage writes history.html: a page that explains itself. At
// the top, the case, seed, verdict, why, and the first bad operation in
// full; then a picture per partition of offsets over time (acknowledged
// writes, reads, faults, the anomalies marked), each point labelled in
// full on hover; then porcupine's own picture (porcupine.html), framed.
func writeHistoryPage(w io.Writer, r *judge.RunResult, porcupine string) error {
	page := historyPage{Case: r.Case, Seed: r.Seed, Verdict: strings.ToUpper(string(r.Verdict)), Reasons: r.Reasons,
		Replay: r.Replay, Porcupine: porcupine}
	h := r.Run.History
	all := slices.Concat(r.Found, r.Allowed)
	if len(all) > maxListed {
		page.More = len(all) - maxListed
		all = all[:maxListed]
	}
	for _, a := range all {
		pa := pageAnomaly{Name: a.Name, Where: fmt.Sprintf("%s-%d offset %d", a.Topic, a.Partition, a.Offset), Detail: a.Detail,
			Allowed: !slices.ContainsFunc(r.Found, func(f linearizability.Anomaly) bool { return f.Name == a.Name && f.Offset == a.Offset })}
		for _, id := range a.Ops {
			if id >= 0 && id < len(h) {
				pa.Ops = append(pa.Ops, describeOp(h[id]))
			}
		}
		page.Anomalies = append(page.Anomalies, pa)
	}
	if len(page.Anomalies) > 0 && len(page.Anomalies[0].Ops) > 0 {
		page.FirstBad = page.Anomalies[0].Ops[0]
	}
	for _, tp := range partitionsOf(h) {
		page.Pictures = append(page.Pictures, picture(tp, h, r.Found, r.Allowed, r.Run.Notes))
	}
	return historyTemplate.Execute(w, page)
}

// maxListed bounds the anomalies the page lists (anomalies.json has all).
const maxListed = 30

type historyPage struct {
	More      int // anomalies not listed
	Case      string
	Seed      uint64
	Verdict   string
	Reasons   []string
	Replay    string
	FirstBad  string
	Anomalies []pageAnomaly
	Pictures  []template.HTML
	Porcupine string
}

type pageAnomaly struct {
	Name, Where, Detail string
	Allowed             bool
	Ops                 []string
}

// describeOp is one operation in full, for a person.
func describeOp(op linearizability.Op) string {
	var b strings.Builder
	fmt.Fprintf(&b, "op %d: client %d %s %s-%d", op.ID, op.Client, op.Kind, op.Topic, op.Partition)
	if op.Value != "" {
		fmt.Fprintf(&b, " value %q", op.Value)
	}
	fmt.Fprintf(&b, " offset %d, called at %d ms, returned at %d ms: %s", op.Offset, op.Call, op.Return, op.Outcome)
	if op.Error != "" {
		fmt.Fprintf(&b, " (%s)", op.Error)
	}
	if n := len(op.Records); n > 0 {
		fmt.Fprintf(&b, "; read %d records, offsets %d-%d", n, op.Records[0].Offset, op.Records[n-1].Offset)
	}
	return b.String()
}

type topicPartition struct {
	topic     string
	partition int32
}

func partitionsOf(h []linearizability.Op) []topicPartition {
	var tps []topicPartition
	for _, op := range h {
		tp := topicPartition{op.Topic, op.Partition}
		if op.Topic != "" && (op.Kind == linearizability.KindProduce || op.Kind == linearizability.KindFetch) && !slices.Contains(tps, tp) {
			tps = append(tps, tp)
		}
	}
	slices.SortFunc(tps, func(a, b topicPartition) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition - b.partition)
	})
	return tps
}

// maxPoints bounds the points of one kind a picture draws (evenly spaced
// among them); anomalies are always drawn.
const maxPoints = 4000

// picture draws one partition: time across, offsets up; blue dots are
// acknowledged writes, grey ones records read, orange lines faults, red
// rings the anomalies.
func picture(tp topicPartition, h []linearizability.Op, found, allowed []linearizability.Anomaly, notes []run.Note) template.HTML {
	const width, height, pad = 960.0, 220.0, 30.0
	var endMs, topOffset int64 = 1, 1
	type point struct {
		t, off int64
		label  string
	}
	var writes, reads []point
	for _, op := range h {
		if op.Topic != tp.topic || op.Partition != tp.partition || op.Return < 0 {
			continue
		}
		endMs = max(endMs, op.Return)
		switch {
		case op.Kind == linearizability.KindProduce && op.Outcome == linearizability.OutcomeOK && op.Offset >= 0:
			writes = append(writes, point{op.Return, op.Offset, describeOp(op)})
			topOffset = max(topOffset, op.Offset)
		case op.Kind == linearizability.KindFetch && op.Outcome == linearizability.OutcomeOK:
			for _, rec := range op.Records {
				reads = append(reads, point{op.Return, rec.Offset, fmt.Sprintf("op %d: client %d read offset %d value %q at %d ms", op.ID, op.Client, rec.Offset, rec.Value, op.Return)})
				topOffset = max(topOffset, rec.Offset)
			}
		}
	}
	x := func(t int64) float64 { return pad + (width-2*pad)*float64(t)/float64(endMs) }
	y := func(off int64) float64 { return height - pad - (height-2*pad)*float64(off)/float64(topOffset) }
	var b strings.Builder
	fmt.Fprintf(&b, `<h3>%s-%d</h3><svg width="%.0f" height="%.0f" class="offsets">`, template.HTMLEscapeString(tp.topic), tp.partition, width, height)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">offset %d</text><text x="%.0f" y="%.0f">%d ms</text>`, pad, pad-8, topOffset, width-pad-60, height-8, endMs)
	for _, n := range notes {
		if n.Kind == run.NoteFault {
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" class="fault"><title>%d ms: %s</title></line>`,
				x(n.AtMs), x(n.AtMs), pad, height-pad, n.AtMs, template.HTMLEscapeString(n.Text))
		}
	}
	draw := func(ps []point, class string, r float64) {
		step := max(1, len(ps)/maxPoints)
		for i := 0; i < len(ps); i += step {
			p := ps[i]
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="%.1f" class="%s"><title>%s</title></circle>`, x(p.t), y(p.off), r, class, template.HTMLEscapeString(p.label))
		}
	}
	draw(reads, "read", 1.2)
	draw(writes, "write", 1.6)
	for _, a := range slices.Concat(found, allowed) {
		if a.Topic != tp.topic || a.Partition != tp.partition || a.Offset < 0 {
			continue
		}
		t := endMs
		if len(a.Ops) > 0 && a.Ops[0] >= 0 && a.Ops[0] < len(h) && h[a.Ops[0]].Return >= 0 {
			t = h[a.Ops[0]].Return
		}
		class := "anomaly"
		if !slices.ContainsFunc(found, func(f linearizability.Anomaly) bool { return f.Name == a.Name && f.Offset == a.Offset }) {
			class = "allowed"
		}
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="6" class="%s"><title>%s at offset %d: %s</title></circle>`,
			x(t), y(a.Offset), class, template.HTMLEscapeString(a.Name), a.Offset, template.HTMLEscapeString(a.Detail))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

var historyTemplate = template.Must(template.New("history").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8">
<title>watermark: {{.Case}} seed {{.Seed}}: {{.Verdict}}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; }
.verdict { font-weight: bold; }
.bad { background: #fdd; padding: .5em; border-left: 4px solid #c00; }
svg.offsets { border: 1px solid #ccc; background: #fafafa; }
circle.write { fill: #2a6fdb; } circle.read { fill: #999; }
circle.anomaly { fill: none; stroke: #d00; stroke-width: 2.5; }
circle.allowed { fill: none; stroke: #e90; stroke-width: 2; }
line.fault { stroke: #f90; stroke-width: 1; stroke-dasharray: 3 2; }
code { background: #eee; padding: 0 .3em; }
iframe { width: 100%; height: 80vh; border: 1px solid #ccc; }
</style></head><body>
<h1>{{.Case}}, seed {{.Seed}}: <span class="verdict">{{.Verdict}}</span></h1>
<p>replay: <code>{{.Replay}}</code></p>
{{if .Reasons}}<ul>{{range .Reasons}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .FirstBad}}<p class="bad">First bad operation: {{.FirstBad}}</p>{{end}}
{{if .Anomalies}}<h2>Anomalies</h2><ul>{{range .Anomalies}}<li><b>{{.Name}}</b>{{if .Allowed}} (allowed){{end}} at {{.Where}}: {{.Detail}}<ul>{{range .Ops}}<li>{{.}}</li>{{end}}</ul></li>{{end}}</ul>{{if .More}}<p>and {{.More}} more: <a href="anomalies.json">anomalies.json</a> lists them all.</p>{{end}}{{end}}
<h2>Offsets over time</h2>
<p>Blue: acknowledged writes; grey: records read; orange: faults; red rings: anomalies (orange rings: allowed ones). Hover for the full label.</p>
{{range .Pictures}}{{.}}{{end}}
<h2>Porcupine's view</h2>
<p>Every operation against the partition log model (<a href="{{.Porcupine}}">open alone</a>).</p>
<iframe src="{{.Porcupine}}"></iframe>
</body></html>
`))
