package report

import (
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/watermarkhq/watermark/conformance/judge"
)

// IndexFiles are the files of a run's folder that the summary page links
// to, when they exist.
var IndexFiles = []string{"verdict.txt", "history.html", "timeline.txt", "run.yaml", "history.jsonl", "porcupine.html"}

type indexLink struct {
	Name string
	Href string
}

type indexRun struct {
	Seed    uint64
	Verdict string
	Reasons []string
	Replay  string
	Dir     string
	Links   []indexLink
}

type indexCase struct {
	Name    string
	Summary string
	Seeds   int
	Ops     int
	Verdict string
	Found   string
	Allowed string
	Failed  []indexRun
}

type indexPage struct {
	Verdict  string
	Runs     int
	Elapsed  string
	Cases    []indexCase
	Failed   int
	Coverage []judge.Coverage
	Reached  int
}

// WriteIndex writes dir/index.html: every case of rep with its verdict,
// seeds, operations and anomalies, and for every failed run its reasons,
// replay command and links to the files WriteRun left in written[run],
// relative to the page so that the folder opens anywhere (a CI artifact,
// say). It links only to files that exist. It returns the page's path.
func WriteIndex(dir string, rep *judge.Report, written map[*judge.RunResult]string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("index: %w", err)
	}
	page := indexPage{Verdict: string(rep.Verdict), Runs: rep.Runs, Elapsed: rep.Elapsed.Round(time.Millisecond).String()}
	for _, cr := range rep.Cases {
		ic := indexCase{Name: cr.Name, Summary: cr.Summary, Seeds: cr.Seeds, Ops: cr.Ops, Verdict: string(cr.Verdict),
			Found: cr.Counts(false), Allowed: cr.Counts(true)}
		for _, r := range cr.Failed {
			ir := indexRun{Seed: r.Seed, Verdict: string(r.Verdict), Reasons: r.Reasons, Replay: r.Replay}
			if runDir := written[r]; runDir != "" {
				ir.Dir, ir.Links = indexLinks(dir, runDir)
			}
			ic.Failed = append(ic.Failed, ir)
			page.Failed++
		}
		page.Cases = append(page.Cases, ic)
	}
	page.Coverage = rep.Coverage()
	for _, c := range page.Coverage {
		if c.Runs > 0 {
			page.Reached++
		}
	}
	path := filepath.Join(dir, "index.html")
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("index: %w", err)
	}
	if err := indexTemplate.Execute(f, page); err != nil {
		f.Close()
		return "", fmt.Errorf("index: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("index: %w", err)
	}
	return path, nil
}

// indexLinks are the existing files of runDir, as paths relative to dir.
func indexLinks(dir, runDir string) (string, []indexLink) {
	// Relative, even out of the page's folder (a merged page links into
	// the shards' folders beside it), so that the tree opens anywhere.
	rel, err := filepath.Rel(dir, runDir)
	if err != nil {
		if abs, err := filepath.Abs(runDir); err == nil {
			rel = abs
		} else {
			rel = runDir
		}
	}
	var links []indexLink
	for _, name := range IndexFiles {
		if st, err := os.Stat(filepath.Join(runDir, name)); err != nil || st.IsDir() {
			continue
		}
		links = append(links, indexLink{Name: name, Href: filepath.ToSlash(filepath.Join(rel, name))})
	}
	return filepath.ToSlash(rel), links
}

var indexTemplate = template.Must(template.New("index").Funcs(template.FuncMap{
	"lower": strings.ToLower,
	"upper": strings.ToUpper,
	"join":  strings.Join,
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>watermark check: {{.Verdict}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.7em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; }
.holds { color: #176b2c; font-weight: bold; }
.violated { color: #b00020; font-weight: bold; }
.unknown, .error { color: #a05a00; font-weight: bold; }
.summary { color: #666; font-size: 0.9em; }
code { background: #f6f6f6; padding: 0.1em 0.3em; }
.run { margin: 0.8em 0 1.2em 0; }
.run ul { margin: 0.3em 0; }
.links a { margin-right: 1em; }
</style>
</head>
<body>
<h1>watermark check: <span class="{{lower .Verdict}}">{{upper .Verdict}}</span></h1>
<p>{{.Runs}} runs in {{.Elapsed}}{{if .Failed}}, {{.Failed}} did not hold{{end}}.</p>
<table>
<tr><th>case</th><th>seeds</th><th>ops</th><th>verdict</th><th>anomalies found</th><th>allowed anomalies seen</th></tr>
{{- range .Cases}}
<tr>
<td>{{if .Failed}}<a href="#{{.Name}}">{{.Name}}</a>{{else}}{{.Name}}{{end}}{{if .Summary}}<div class="summary">{{.Summary}}</div>{{end}}</td>
<td class="num">{{.Seeds}}</td><td class="num">{{.Ops}}</td>
<td class="{{lower .Verdict}}">{{upper .Verdict}}</td>
<td>{{.Found}}</td><td>{{.Allowed}}</td>
</tr>
{{- end}}
</table>
<h2>Coverage: {{.Reached}} of {{len .Coverage}} protocol situations reached</h2>
<table>
<tr><th>situation</th><th>runs</th><th>cases</th></tr>
{{- range .Coverage}}
<tr><td>{{.Situation}}</td><td class="num">{{.Runs}}</td><td>{{if .Cases}}{{join .Cases ", "}}{{else}}<span class="unknown">never reached</span>{{end}}</td></tr>
{{- end}}
</table>
{{- if .Failed}}
<h2>Failed runs</h2>
{{- range .Cases}}{{if .Failed}}
<h3 id="{{.Name}}">{{.Name}}</h3>
{{- range .Failed}}
<div class="run">
<div><b>seed {{.Seed}}</b>: <span class="{{lower .Verdict}}">{{upper .Verdict}}</span>{{if .Dir}} &mdash; <code>{{.Dir}}</code>{{end}}</div>
<ul>{{range .Reasons}}<li>{{.}}</li>{{end}}</ul>
{{- if .Links}}
<div class="links">{{range .Links}}<a href="{{.Href}}">{{.Name}}</a>{{end}}</div>
{{- end}}
<div>replay: <code>{{.Replay}}</code></div>
</div>
{{- end}}
{{- end}}{{end}}
{{- else}}
<p>Every case holds: no run left a report.</p>
{{- end}}
</body>
</html>
`))
