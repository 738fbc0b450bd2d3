package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/partition"
)

// defaultSeeds is how many seeds each case runs with by default: enough for
// the random fault schedules to vary, small enough to finish in seconds.
const defaultSeeds = 10

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("watermark check", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	caseNames := fs.StringArray("case", nil, "run only this case (repeatable); a base name selects its variants")
	seeds := fs.Int("seeds", defaultSeeds, "seeds per case (runs 1..N)")
	seed := fs.Uint64("seed", 0, "run exactly this one seed (replays a reported run)")
	truncation := fs.String("truncation", "", "override the cases' truncation variant: hw, epoch, epoch-kip101 or epoch-no-bump-truncation (default: each case's own, epoch)")
	producerState := fs.String("producer-state", "", "override how brokers keep idempotent-producer state: replicated or leader-only (the dedup-across-leader-change bug)")
	reportDir := fs.String("report-dir", "watermark-report", "where failed runs leave their history, config, timeline and HTML, under a summary page index.html")
	asJSON := fs.Bool("json", false, "print the result as JSON on stdout")
	checkTimeout := fs.Duration("check-timeout", 30*time.Second, "porcupine's time limit per run; past it the verdict is unknown")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "runs in parallel")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	target := fs.String("target", "sim", "what the cases run against: sim (the deterministic simulated reference), cluster (a fresh local cluster of watermark serve processes per run, with SIGKILL, SIGSTOP and proxy faults, in real time) or kafka (any running Kafka-compatible cluster at --bootstrap)")
	bootstrap := fs.StringSlice("bootstrap", nil, "with --target kafka: HOST:PORT of the cluster's brokers (comma-separated or repeated)")
	killCmd := fs.String("kill-cmd", "", "with --target kafka: shell command that kills broker {id} (e.g. 'docker kill kafka{id}'); with --restart-cmd it enables the crash cases")
	restartCmd := fs.String("restart-cmd", "", "with --target kafka: shell command that restarts broker {id} on its data (e.g. 'docker start kafka{id}')")
	pauseCmd := fs.String("pause-cmd", "", "with --target kafka: shell command that pauses broker {id} (e.g. 'docker pause kafka{id}')")
	resumeCmd := fs.String("resume-cmd", "", "with --target kafka: shell command that resumes broker {id} (e.g. 'docker unpause kafka{id}')")
	isolateCmd := fs.String("isolate-cmd", "", "with --target kafka: shell command that cuts broker {id} off from the other brokers and the clients")
	healCmd := fs.String("heal-cmd", "", "with --target kafka: shell command that ends every isolation")
	junit := fs.String("junit", "", "write the result as JUnit XML to FILE, for CI systems")
	binary := fs.String("binary", "", "with --target cluster: the watermark executable the nodes run (default: this one)")
	clusterDir := fs.String("cluster-dir", "", "with --target cluster: where each run's cluster keeps its data and logs (default: <report-dir>/clusters; runs that hold are removed)")
	duration := fs.Duration("duration", 0, "with --target cluster or kafka: how long the workload and faults run (default: the case's own, 20 s for most; shorter runs may not get to the faults a case is about)")
	settle := fs.Duration("settle", 0, "with --target cluster or kafka: how long the cluster settles after the faults heal, for the final read (default: the case's own, 10 s for most)")
	validate := fs.Bool("validate-protocol", false, "with --target sim: check every replication step of each run against spec/protocol's model (trace validation; runs are several times slower, and leaders answer replica fetches at once); a step the model does not allow violates the run")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return usageError(stderr, fs, err)
	}
	if *help {
		fmt.Fprintln(stdout, "usage: watermark check [flags]\n\nRuns the conformance cases on the simulated reference cluster (--target sim, the default),\nor on real reference processes (--target cluster: one seed per case unless --seeds is given;\ncases that need what real processes cannot do, such as power loss, are reported as skipped).\n\nflags:")
		fmt.Fprint(stdout, fs.FlagUsages())
		fmt.Fprintf(stdout, "\ncases: %s\n", conformance.CaseNames())
		return exitOK
	}
	if fs.NArg() > 0 {
		return usageError(stderr, fs, fmt.Errorf("unexpected argument %q (cases are chosen with --case)", fs.Arg(0)))
	}
	cases, err := conformance.Lookup(*caseNames)
	if err != nil {
		return usageError(stderr, fs, err)
	}
	opts := conformance.Options{ValidateProtocol: *validate}
	if *validate && *target != "sim" {
		return usageError(stderr, fs, fmt.Errorf("--validate-protocol needs the simulator (--target sim), not --target %s", *target))
	}
	if *truncation != "" {
		t, err := partition.ParseTruncation(*truncation)
		if err != nil {
			return usageError(stderr, fs, fmt.Errorf("--truncation: %v", err))
		}
		opts.Truncation = &t
	}
	if *producerState != "" {
		ps, err := partition.ParseProducerState(*producerState)
		if err != nil {
			return usageError(stderr, fs, fmt.Errorf("--producer-state: %v", err))
		}
		opts.ProducerState = &ps
	}
	if *seeds < 1 {
		return usageError(stderr, fs, fmt.Errorf("--seeds %d: want at least 1", *seeds))
	}
	if *workers < 1 {
		return usageError(stderr, fs, fmt.Errorf("--workers %d: want at least 1", *workers))
	}
	if *checkTimeout < 0 {
		return usageError(stderr, fs, fmt.Errorf("--check-timeout %s: want >= 0 (0 = no limit)", *checkTimeout))
	}
	if need := conformance.NeedFailpoints(cases); *target == "sim" && len(need) > 0 && !broker.FailpointsCompiled() {
		fmt.Fprintf(stderr, "watermark check: cases %s drive failpoints, but this binary was built without them.\n"+
			"Build it with `make build` (bin/watermark), or leave those cases out with --case.\n", strings.Join(need, ", "))
		return exitUsage
	}
	switch *target {
	case "sim":
	case "cluster":
		exe := *binary
		if exe == "" {
			if exe, err = os.Executable(); err != nil {
				return usageError(stderr, fs, fmt.Errorf("--binary: cannot find this executable (%v); give the path of a watermark binary", err))
			}
		}
		if _, err := os.Stat(exe); err != nil {
			return usageError(stderr, fs, fmt.Errorf("--binary %s: %v", exe, err))
		}
		if *duration < 0 || *settle < 0 {
			return usageError(stderr, fs, fmt.Errorf("--duration %s --settle %s: want both >= 0 (0: the case's own)", *duration, *settle))
		}
		dir := *clusterDir
		if dir == "" {
			dir = filepath.Join(*reportDir, "clusters")
		}
		ct := &conformance.ClusterTarget{Binary: exe, Dir: dir, DurationMs: duration.Milliseconds(), SettleMs: settle.Milliseconds()}
		opts.Target = ct
		if !fs.Changed("seeds") {
			*seeds = 1
		}
	case "kafka":
		if len(*bootstrap) == 0 {
			return usageError(stderr, fs, fmt.Errorf("--target kafka needs --bootstrap HOST:PORT"))
		}
		if *duration < 0 || *settle < 0 {
			return usageError(stderr, fs, fmt.Errorf("--duration %s --settle %s: want both >= 0 (0: the case's own)", *duration, *settle))
		}
		kt := &conformance.KafkaTarget{Bootstrap: *bootstrap, KillCmd: *killCmd, RestartCmd: *restartCmd,
			PauseCmd: *pauseCmd, ResumeCmd: *resumeCmd, IsolateCmd: *isolateCmd, HealCmd: *healCmd,
			DurationMs: duration.Milliseconds(), SettleMs: settle.Milliseconds()}
		// Fail fast, before any case, when nothing answers.
		if _, _, err := kt.Probe(context.Background()); err != nil {
			fmt.Fprintf(stderr, "watermark check: %v\n", err)
			return exitViolated
		}
		opts.Target = kt
		if !fs.Changed("seeds") {
			*seeds = 1
		}
	default:
		return usageError(stderr, fs, fmt.Errorf("--target %q: want sim, cluster or kafka", *target))
	}
	seedList := make([]uint64, 0, *seeds)
	if fs.Changed("seed") {
		seedList = append(seedList, *seed)
	} else {
		for s := 1; s <= *seeds; s++ {
			seedList = append(seedList, uint64(s))
		}
	}

	progress := newProgress(stderr, *quiet || *asJSON)
	rep, err := conformance.Check(cases, seedList, opts, *checkTimeout, *workers, progress.update)
	progress.done()
	if err != nil {
		fmt.Fprintf(stderr, "watermark check: %v\n", err)
		return exitViolated
	}
	written := map[*conformance.RunResult]string{}
	for _, cr := range rep.Cases {
		for _, r := range cr.Failed {
			dir, err := conformance.WriteRun(*reportDir, r)
			if err != nil {
				fmt.Fprintf(stderr, "watermark check: %v\n", err)
			}
			written[r] = dir
		}
	}
	index, err := conformance.WriteIndex(*reportDir, rep, written)
	if err != nil {
		fmt.Fprintf(stderr, "watermark check: %v\n", err)
	}
	if *junit != "" {
		if err := writeJUnitFile(*junit, rep, *target); err != nil {
			fmt.Fprintf(stderr, "watermark check: --junit %s: %v\n", *junit, err)
			return exitViolated
		}
	}
	if *asJSON {
		if err := writeJSONReport(stdout, rep, written, *validate); err != nil {
			fmt.Fprintf(stderr, "watermark check: %v\n", err)
			return exitViolated
		}
	} else {
		printTable(stdout, rep, written)
		if *validate {
			checked, skipped := rep.Steps()
			fmt.Fprintf(stdout, "trace validation: %d protocol steps checked against spec/protocol's model, %d skipped\n", checked, skipped)
		}
		if index != "" {
			fmt.Fprintf(stdout, "summary: %s\n", index)
		}
	}
	if rep.Verdict != conformance.Holds {
		if rep.Verdict == conformance.Skipped {
			fmt.Fprintln(stderr, "watermark check: every case was skipped on this target: nothing was checked")
		}
		return exitViolated
	}
	return exitOK
}

func usageError(w io.Writer, fs *pflag.FlagSet, err error) int {
	fmt.Fprintf(w, "watermark check: %v\n\nflags:\n%s", err, fs.FlagUsages())
	return exitUsage
}

func printTable(w io.Writer, rep *conformance.Report, written map[*conformance.RunResult]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tSEEDS\tOPS\tVERDICT\tANOMALIES FOUND\tALLOWED ANOMALIES SEEN")
	for _, cr := range rep.Cases {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", cr.Name, cr.Seeds, cr.Ops, strings.ToUpper(string(cr.Verdict)),
			counts(cr.Found), counts(cr.Allowed))
	}
	tw.Flush()
	for _, cr := range rep.Cases {
		if cr.Verdict == conformance.Skipped {
			fmt.Fprintf(w, "\n%s: SKIPPED: %s\n", cr.Name, cr.Skipped)
		}
	}
	for _, cr := range rep.Cases {
		for i, r := range cr.Failed {
			if i == 3 {
				fmt.Fprintf(w, "\n... and %d more failed runs of %s under %s\n", len(cr.Failed)-3, cr.Name, conformanceDirOf(written, r))
				break
			}
			fmt.Fprintf(w, "\n%s seed %d: %s\n", r.Case, r.Seed, strings.ToUpper(string(r.Verdict)))
			for _, reason := range r.Reasons {
				fmt.Fprintln(w, indent(reason, "  - "))
			}
			if dir := written[r]; dir != "" {
				fmt.Fprintf(w, "  report: %s\n", dir)
			}
			fmt.Fprintf(w, "  replay: %s\n", conformance.ReplayCommand(r))
		}
	}
	fmt.Fprintf(w, "\n%s in %s: %s\n", plural(rep.Runs, "run"), rep.Elapsed.Round(time.Millisecond), verdictLine(rep))
}

func conformanceDirOf(written map[*conformance.RunResult]string, r *conformance.RunResult) string {
	if d := written[r]; d != "" {
		return d[:strings.LastIndex(d, string(os.PathSeparator))]
	}
	return "the report folder"
}

func verdictLine(rep *conformance.Report) string {
	switch rep.Verdict {
	case conformance.Holds:
		skipped := 0
		for _, cr := range rep.Cases {
			if cr.Verdict == conformance.Skipped {
				skipped++
			}
		}
		if skipped > 0 {
			return fmt.Sprintf("every case that ran holds; %s skipped on this target", plural(skipped, "case"))
		}
		return "every case holds"
	case conformance.Skipped:
		return "every case was skipped on this target"
	case conformance.Unknown:
		return "a checker ran out of time: the verdict is unknown, not a pass"
	}
	n := 0
	for _, cr := range rep.Cases {
		if cr.Verdict == conformance.Violated {
			n++
		}
	}
	return plural(n, "case") + " violated"
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s x%d", n, m[n])
	}
	return strings.Join(parts, ", ")
}

// jsonReport is the machine-readable result of `watermark check --json`.
type jsonReport struct {
	Verdict   string `json:"verdict"`
	Runs      int    `json:"runs"`
	ElapsedMs int64  `json:"elapsed_ms"`
	// TraceValidation is there with --validate-protocol.
	TraceValidation *jsonSteps `json:"trace_validation,omitempty"`
	Cases           []jsonCase `json:"cases"`
}

// jsonSteps counts the replication steps trace validation checked and
// left unchecked.
type jsonSteps struct {
	Checked int `json:"steps_checked"`
	Skipped int `json:"steps_skipped"`
}

type jsonCase struct {
	Name    string         `json:"name"`
	Seeds   int            `json:"seeds"`
	Ops     int            `json:"ops"`
	Verdict string         `json:"verdict"`
	Found   map[string]int `json:"anomalies_found"`
	Allowed map[string]int `json:"allowed_anomalies_seen"`
	// TraceValidation is there with --validate-protocol.
	TraceValidation *jsonSteps `json:"trace_validation,omitempty"`
	Failed          []jsonRun  `json:"failed_runs"`
}

type jsonRun struct {
	Seed    uint64   `json:"seed"`
	Verdict string   `json:"verdict"`
	Reasons []string `json:"reasons"`
	Report  string   `json:"report_dir,omitempty"`
	Replay  string   `json:"replay"`
}

func writeJSONReport(w io.Writer, rep *conformance.Report, written map[*conformance.RunResult]string, validate bool) error {
	out := jsonReport{Verdict: string(rep.Verdict), Runs: rep.Runs, ElapsedMs: rep.Elapsed.Milliseconds()}
	if validate {
		checked, skipped := rep.Steps()
		out.TraceValidation = &jsonSteps{Checked: checked, Skipped: skipped}
	}
	for _, cr := range rep.Cases {
		jc := jsonCase{Name: cr.Name, Seeds: cr.Seeds, Ops: cr.Ops, Verdict: string(cr.Verdict),
			Found: cr.Found, Allowed: cr.Allowed, Failed: []jsonRun{}}
		if validate {
			jc.TraceValidation = &jsonSteps{Checked: cr.StepsChecked, Skipped: cr.StepsSkipped}
		}
		for _, r := range cr.Failed {
			jc.Failed = append(jc.Failed, jsonRun{Seed: r.Seed, Verdict: string(r.Verdict), Reasons: r.Reasons,
				Report: written[r], Replay: conformance.ReplayCommand(r)})
		}
		out.Cases = append(out.Cases, jc)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func runCases(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] != "-h" && args[0] != "--help" {
		fmt.Fprintf(stderr, "watermark cases: takes no arguments\n")
		return exitUsage
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for _, c := range conformance.Cases {
		fmt.Fprintf(tw, "%s\t%s\n", c.Name, c.Summary)
	}
	tw.Flush()
	return exitOK
}

// writeJUnitFile writes rep as JUnit XML to path, atomically enough for a
// CI system that reads it after the command exits.
func writeJUnitFile(path string, rep *conformance.Report, target string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := conformance.WriteJUnit(f, rep, target); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
