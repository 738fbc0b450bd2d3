package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/report"
	"github.com/watermarkhq/watermark/conformance/targets"
	"github.com/watermarkhq/watermark/conformance/variant"
	"github.com/watermarkhq/watermark/conformance/wire"
	"github.com/watermarkhq/watermark/impl/broker"
)

// defaultSeeds is how many seeds each case runs with by default: enough for
// the random fault schedules to vary, small enough to finish in seconds.
const defaultSeeds = 10

// exitInterrupted is check's exit status when Ctrl-C stopped it, as a
// shell reports a command that SIGINT ended; exitTerminated when SIGTERM
// did (a CI system's job timeout).
const (
	exitInterrupted = 130
	exitTerminated  = 143
)

const checkHelp = `usage: watermark check [flags]

Runs the conformance cases on the simulated reference cluster (--target sim, the default),
on real reference processes (--target cluster: one seed per case unless --seeds is given),
or on any running Kafka-compatible cluster (--target kafka --bootstrap HOST:PORT). Cases a
target cannot run (power loss on real processes, say) are reported as skipped, with why.

Exit status: 0 when every case holds; 1 when one is violated, or a verdict is unknown (a
checker ran out of time, or a run did not get to what its case is about: never a pass);
2 for bad usage; 130 when Ctrl-C (SIGINT) stopped it, 143 when SIGTERM did (a CI job
timeout): either way what ran is printed and written to the report.

flags:
`

func runCheck(args []string, stdout, stderr io.Writer) int {
	ctx, sig, stop := stopContext()
	defer stop()
	code := check(ctx, args, stdout, stderr)
	if code == exitInterrupted {
		return exitForSignal(sig())
	}
	return code
}

// stopContext is a context that SIGINT or SIGTERM ends, as a terminal's
// Ctrl-C or a CI system's job timeout stops a check; sig tells which ended
// it. A second signal ends the process at once.
func stopContext() (ctx context.Context, sig func() os.Signal, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s, ok := <-sigs
		if !ok {
			return
		}
		cancel(signalError{s})
		signal.Stop(sigs) // a second signal ends the process at once
	}()
	sig = func() os.Signal {
		var se signalError
		if errors.As(context.Cause(ctx), &se) {
			return se.sig
		}
		return os.Interrupt
	}
	return ctx, sig, func() { signal.Stop(sigs); cancel(nil) }
}

type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return "stopped by " + e.sig.String() }

// exitForSignal is the status a shell reports for a command the signal
// ended: 130 for SIGINT, 143 for SIGTERM.
func exitForSignal(s os.Signal) int {
	if s == syscall.SIGTERM {
		return exitTerminated
	}
	return exitInterrupted
}

// check is `watermark check` until ctx ends.
func check(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("watermark check", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	caseNames := fs.StringArray("case", nil, "run only the case `name` (repeatable); a base name selects its variants (watermark cases lists them)")
	seeds := fs.Int("seeds", defaultSeeds, "seeds per case (runs 1..N)")
	seed := fs.Uint64("seed", 0, "run exactly this one seed (replays a reported run)")
	variantName := fs.String("variant", "", "run every case on this variant of the protocol (a known bug): "+variant.Names())
	sets := fs.StringArray("set", nil, "override a field of every case's run, KEY=VALUE with run-file keys (repeatable), e.g. --set broker.min_insync_replicas=1")
	reportDir := fs.String("report-dir", "watermark-report", "where failed runs leave their history, run file, timeline and HTML, under a summary page index.html")
	asJSON := fs.Bool("json", false, "print the result as JSON on stdout")
	junit := fs.String("junit", "", "write the result as JUnit XML to FILE, for CI systems")
	checkTimeout := fs.Duration("check-timeout", 30*time.Second, "porcupine's time limit per run; past it the verdict is unknown")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "runs in parallel on the simulator")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	validate := fs.Bool("validate-protocol", false, "with --target sim: check every replication step of each run against spec/protocol's model (trace validation; runs are several times slower, and leaders answer replica fetches at once); a step the model does not allow violates the run")
	target := fs.String("target", "sim", "what the cases run against: sim (the deterministic simulated reference), cluster (a fresh local cluster of watermark serve processes per run, with SIGKILL, SIGSTOP and proxy faults, in real time) or kafka (any running Kafka-compatible cluster at --bootstrap)")
	fs.String("binary", "", "with --target cluster: the watermark executable the nodes run (default: this one)")
	fs.String("cluster-dir", "", "with --target cluster: where each run's cluster keeps its data and logs (default: <report-dir>/clusters; runs that hold are removed)")
	bootstrap := fs.StringSlice("bootstrap", nil, "with --target kafka: HOST:PORT of the cluster's brokers (comma-separated or repeated)")
	killCmd := fs.String("kill-cmd", "", "with --target kafka: shell command that kills broker {id} (e.g. 'docker kill kafka{id}'); with --restart-cmd it enables the crash cases")
	restartCmd := fs.String("restart-cmd", "", "with --target kafka: shell command that restarts broker {id} on its data (e.g. 'docker start kafka{id}')")
	pauseCmd := fs.String("pause-cmd", "", "with --target kafka: shell command that pauses broker {id} (e.g. 'docker pause kafka{id}')")
	resumeCmd := fs.String("resume-cmd", "", "with --target kafka: shell command that resumes broker {id} (e.g. 'docker unpause kafka{id}')")
	isolateCmd := fs.String("isolate-cmd", "", "with --target kafka: shell command that cuts broker {id} off from the other brokers and the clients")
	slowCmd := fs.String("slow-cmd", "", "with --target kafka: shell command that adds {ms} ms to broker {id}'s links to the other brokers, 0 for none (e.g. tc netem); without it a slow fault slows only the harness's own links to the broker")
	stopCmd := fs.String("stop-cmd", "", "with --target kafka: shell command that stops broker {id} as an operator does (SIGTERM: a controlled shutdown) and returns once it has exited; with --restart-cmd it enables the clean-stop cases")
	healCmd := fs.String("heal-cmd", "", "with --target kafka: shell command that ends every isolation")
	createTopicCmd := fs.String("create-topic-cmd", "", "with --target kafka: shell command that creates topic {topic} with {partitions} partitions, replication factor {rf} and the case's configs ({configs}: name=value,...; {config_flags}: --config name=value ...), instead of the harness's CreateTopics")
	maxVersions := fs.StringArray("max-version", nil, "with --target kafka: KEY=V caps API KEY (Produce, Metadata, ... or its number) at version V in the harness's requests (repeatable); the wire stage pins those a broker answers wrongly by itself")
	onlyWire := fs.Bool("wire", false, "with --target kafka: run only the wire-protocol stage (every API and version the broker lists, and bad requests) and print its table")
	targetFile := fs.String("target-file", "", "with --target kafka: a YAML file with the cluster (bootstrap: [HOST:PORT]) and its commands (kill_cmd, restart_cmd, pause_cmd, resume_cmd, isolate_cmd, heal_cmd, create_topic_cmd), instead of those flags; replay lines name it")
	duration := fs.Duration("duration", 0, "with --target cluster or kafka: how long the workload and faults run (default: the case's own, 20 s for most; shorter runs may not get to the faults a case is about)")
	settle := fs.Duration("settle", 0, "with --target cluster or kafka: how long the cluster settles after the faults heal, for the final read (default: the case's own, 10 s for most)")
	failFast := fs.Bool("fail-fast", false, "stop at the first run that does not hold (the runs in flight finish); exit 1 with what ran")
	random := fs.Int("random", 0, "instead of the cases, run N random schedules of every fault kind and cluster shape on the safe settings, coverage-guided (--seed sets the first seed); with --target cluster, on a fresh local cluster each, of the faults real processes can take; a failed run leaves a run file that replays it")
	shardFlag := fs.String("shard", "", "run only shard `I/N` (e.g. 2/4): every Nth (case, seed) pair, or the Ith share of --random's budget, for one CI runner each; the shard's result goes to <report-dir>/shard.json, and watermark merge joins the shards' folders")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return usageError(stderr, "check", err)
	}
	var shard conformance.Shard
	if *shardFlag != "" {
		var err error
		if shard, err = conformance.ParseShard(*shardFlag); err != nil {
			return usageError(stderr, "check", err)
		}
	}
	if *help {
		fmt.Fprint(stdout, checkHelp)
		fmt.Fprint(stdout, fs.FlagUsages())
		fmt.Fprintf(stdout, "\ncases: %s\nvariants: %s\n", cases.Names(), variant.Names())
		return exitOK
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "check", fmt.Errorf("unexpected argument %q (cases are chosen with --case)", fs.Arg(0)))
	}
	if fs.Changed("random") {
		if *workers < 1 {
			return usageError(stderr, "check", fmt.Errorf("--workers %d: want at least 1", *workers))
		}
		return checkRandom(ctx, fs, *random, *seed, *workers, *checkTimeout, *reportDir, *asJSON, *junit, shard,
			newProgress(stderr, *quiet || *asJSON), stdout, stderr)
	}
	list, err := cases.Lookup(*caseNames)
	if err != nil {
		return usageError(stderr, "check", err)
	}
	opts := conformance.Options{ValidateProtocol: *validate, Set: *sets, CheckTimeout: *checkTimeout,
		Workers: *workers, Context: ctx, Program: program(), Shard: shard}
	if *variantName != "" {
		if opts.Variant, err = variant.Runnable(*variantName); err != nil {
			return usageError(stderr, "check", fmt.Errorf("--variant: %v", err))
		}
	}
	if *validate && *target != "sim" {
		return usageError(stderr, "check", fmt.Errorf("--validate-protocol needs the simulator (--target sim), not --target %s", *target))
	}
	if *seeds < 1 {
		return usageError(stderr, "check", fmt.Errorf("--seeds %d: want at least 1", *seeds))
	}
	if *workers < 1 {
		return usageError(stderr, "check", fmt.Errorf("--workers %d: want at least 1", *workers))
	}
	if *checkTimeout < 0 {
		return usageError(stderr, "check", fmt.Errorf("--check-timeout %s: want >= 0 (0 = no limit)", *checkTimeout))
	}
	// Every case's run must take the variant and the overrides.
	for i := range list {
		s, err := opts.Spec(&list[i], 1)
		if err == nil {
			err = s.Validate()
		}
		if err != nil {
			return usageError(stderr, "check", fmt.Errorf("case %s: %v", list[i].Name, err))
		}
	}
	if need := cases.NeedFailpoints(list); *target == "sim" && len(need) > 0 && !broker.FailpointsCompiled() {
		fmt.Fprintf(stderr, "watermark check: cases %s drive failpoints, but this binary was built without them.\n"+
			"Build it with `make build` (bin/watermark), or leave those cases out with --case.\n", strings.Join(need, ", "))
		return exitUsage
	}
	if *target != "kafka" {
		for _, f := range []string{"bootstrap", "kill-cmd", "restart-cmd", "pause-cmd", "resume-cmd", "isolate-cmd", "heal-cmd", "slow-cmd", "create-topic-cmd", "target-file", "max-version", "wire"} {
			if fs.Changed(f) {
				return usageError(stderr, "check", fmt.Errorf("--%s is for --target kafka (this is --target %s)", f, *target))
			}
		}
	}
	show := newProgress(stderr, *quiet || *asJSON)
	var wired *wire.Result // the wire stage of --target kafka, its bad requests still to send
	switch *target {
	case "sim":
		opts.Target = targets.Simulator
	case "cluster", "kafka":
		if *duration < 0 || *settle < 0 {
			return usageError(stderr, "check", fmt.Errorf("--duration %s --settle %s: want both >= 0 (0: the case's own)", *duration, *settle))
		}
		if !fs.Changed("seeds") {
			*seeds = 1
		}
		if *target == "cluster" {
			ct, err := clusterTarget(fs, *reportDir, show)
			if err != nil {
				return usageError(stderr, "check", err)
			}
			opts.Target = ct
			break
		}
		var kt *conformance.KafkaTarget
		if *targetFile != "" {
			for _, f := range []string{"bootstrap", "kill-cmd", "restart-cmd", "pause-cmd", "resume-cmd", "isolate-cmd", "heal-cmd", "slow-cmd", "stop-cmd", "create-topic-cmd"} {
				if fs.Changed(f) {
					return usageError(stderr, "check", fmt.Errorf("--%s with --target-file: give the target in the file or as flags, not both", f))
				}
			}
			var err error
			if kt, err = conformance.ReadTargetFile(*targetFile); err != nil {
				return usageError(stderr, "check", err)
			}
		} else {
			if len(*bootstrap) == 0 {
				return usageError(stderr, "check", fmt.Errorf("--target kafka needs --bootstrap HOST:PORT (or --target-file FILE)"))
			}
			kt = &conformance.KafkaTarget{Bootstrap: *bootstrap, KillCmd: *killCmd, RestartCmd: *restartCmd,
				PauseCmd: *pauseCmd, ResumeCmd: *resumeCmd, IsolateCmd: *isolateCmd, HealCmd: *healCmd, SlowCmd: *slowCmd, StopCmd: *stopCmd, CreateTopicCmd: *createTopicCmd}
		}
		kt.DurationMs, kt.SettleMs, kt.Progress = duration.Milliseconds(), settle.Milliseconds(), show.runTime
		for _, mv := range *maxVersions {
			k, v, err := wire.ParseMaxVersion(mv)
			if err != nil {
				return usageError(stderr, "check", err)
			}
			if kt.MaxVersions == nil {
				kt.MaxVersions = map[int16]int16{}
			}
			kt.MaxVersions[k] = v
		}
		if *onlyWire {
			return wireOnly(ctx, kt, *asJSON, stdout, stderr)
		}
		// The well-formed requests first: the versions that pass are the
		// ones the cases speak, Probe's included.
		var code int
		var done bool
		if wired, code, done = wireBefore(ctx, kt, stderr); done {
			return code
		}
		// Fail fast, before any case, when nothing answers.
		if _, _, err := kt.Probe(ctx); err != nil {
			fmt.Fprintf(stderr, "watermark check: %v\n", err)
			return exitViolated
		}
		for _, n := range kt.Notes {
			fmt.Fprintf(stderr, "watermark check: %s\n", n)
		}
		opts.Target = kt
	default:
		return usageError(stderr, "check", fmt.Errorf("--target %q: want sim, cluster or kafka", *target))
	}
	seedList := make([]uint64, 0, *seeds)
	if fs.Changed("seed") {
		seedList = append(seedList, *seed)
	} else {
		for s := 1; s <= *seeds; s++ {
			seedList = append(seedList, uint64(s))
		}
	}

	runs, stopRuns := context.WithCancel(ctx)
	defer stopRuns()
	stopped := false
	opts.Context = runs
	opts.Progress = func(p conformance.Progress) {
		show.update(p)
		if *failFast && p.Phase == conformance.PhaseDone && p.Result.Verdict != conformance.Holds && p.Result.Verdict != conformance.Skipped {
			stopped = true
			stopRuns()
		}
	}
	rep, err := conformance.Check(list, seedList, opts)
	show.done()
	if ctx.Err() == nil {
		wireAfter(ctx, wired, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "watermark check: %v\n", err)
		return exitViolated
	}
	written := map[*conformance.RunResult]string{}
	byName := map[string]*conformance.Case{}
	order := make([]string, len(list))
	for i := range list {
		byName[list[i].Name], order[i] = &list[i], list[i].Name
	}
	for _, cr := range rep.Cases {
		for _, r := range cr.Failed {
			dir, err := report.WriteRun(*reportDir, r, byName[cr.Name])
			if err != nil {
				fmt.Fprintf(stderr, "watermark check: %v\n", err)
			}
			written[r] = dir
		}
	}
	if !shard.Whole() {
		writeShardFile(fs, shard, *target, order, rep, written, *reportDir, stderr)
	}
	index, err := report.WriteIndex(*reportDir, rep, written)
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
		if *target == "sim" {
			printCoverage(stdout, rep)
		}
		if *validate {
			checked, skipped := rep.Steps()
			fmt.Fprintf(stdout, "trace validation: %d protocol steps checked against spec/protocol's model, %d skipped\n", checked, skipped)
		}
		if index != "" {
			fmt.Fprintf(stdout, "summary: %s\n", index)
		}
	}
	if stopped && ctx.Err() == nil {
		fmt.Fprintf(stderr, "watermark check: stopped at the first run that did not hold (--fail-fast), after %d of %d runs.\n", rep.Runs, rep.Planned)
		return exitViolated
	}
	if rep.Interrupted {
		fmt.Fprintf(stderr, "watermark check: interrupted after %d of %d runs; what ran is reported above.\n", rep.Runs, rep.Planned)
		if rest := remaining(rep, len(seedList)); len(rest) > 0 {
			fmt.Fprintf(stderr, "To run the cases not finished: %s check --case %s%s\n", program(), strings.Join(rest, " --case "), seedArgs(fs, *seed, *seeds))
		}
		return exitInterrupted
	}
	if rep.Verdict != conformance.Holds {
		if rep.Verdict == conformance.Skipped {
			fmt.Fprintln(stderr, "watermark check: every case was skipped on this target: nothing was checked")
		}
		return exitViolated
	}
	return exitOK
}

// remaining names the cases an interrupted check did not finish.
func remaining(rep *conformance.Report, seeds int) []string {
	var out []string
	for _, cr := range rep.Cases {
		if cr.Seeds < seeds && cr.Skipped == "" {
			out = append(out, cr.Name)
		}
	}
	return out
}

func seedArgs(fs *pflag.FlagSet, seed uint64, seeds int) string {
	if fs.Changed("seed") {
		return fmt.Sprintf(" --seed %d", seed)
	}
	if fs.Changed("seeds") {
		return fmt.Sprintf(" --seeds %d", seeds)
	}
	return ""
}

// program is how this command was invoked, so that the commands it prints
// run as printed: ./bin/watermark when run as that, watermark from PATH.
func program() string {
	if len(os.Args) == 0 || filepath.Base(os.Args[0]) != "watermark" {
		return "watermark"
	}
	return os.Args[0]
}

func usageError(w io.Writer, cmd string, err error) int {
	fmt.Fprintf(w, "watermark %s: %v\n\nRun `watermark %s --help` for the flags.\n", cmd, err, cmd)
	return exitUsage
}

func runCases(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(stdout, "usage: watermark cases [--cluster-flags]\n\nLists the conformance cases, a line each: what the case does and what it allows.\n"+
			"`watermark check --case NAME` runs one.\n\n"+
			"--cluster-flags lists instead, a line each, the cases that give their brokers settings a\n"+
			"topic cannot carry, with the `watermark cluster` flags that start a cluster with them:\n"+
			"what --target kafka needs of the cluster to run the case as --target cluster does.")
		return exitOK
	}
	flags := len(args) == 1 && args[0] == "--cluster-flags"
	if len(args) > 0 && !flags {
		fmt.Fprintf(stderr, "watermark cases: unknown argument %q (the one flag is --cluster-flags)\n", args[0])
		return exitUsage
	}
	if flags {
		for _, c := range cases.Cases {
			var fl []string
			for _, s := range conformance.ClusterSettings(c.Spec(1)) {
				fl = append(fl, s.Flag())
			}
			if len(fl) > 0 {
				fmt.Fprintf(stdout, "%s\t%s\n", c.Name, strings.Join(fl, " "))
			}
		}
		return exitOK
	}
	tw := newTable(stdout)
	for _, c := range cases.Cases {
		tw.row(c.Name, c.Summary)
	}
	tw.flush()
	return exitOK
}

// writeJUnitFile writes rep as JUnit XML to path, for a CI system that
// reads it after the command exits.
func writeJUnitFile(path string, rep *conformance.Report, target string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.WriteJUnit(f, rep, target); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// clusterTarget is --target cluster as fs's flags shape it: the binary the
// nodes run, where their clusters keep data and logs, and the run's
// duration and settle time when given.
func clusterTarget(fs *pflag.FlagSet, reportDir string, show *progress) (*targets.ClusterTarget, error) {
	exe, _ := fs.GetString("binary")
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("--binary: cannot find this executable (%v); give the path of a watermark binary", err)
		}
	}
	if _, err := os.Stat(exe); err != nil {
		return nil, fmt.Errorf("--binary %s: %v", exe, err)
	}
	dir, _ := fs.GetString("cluster-dir")
	if dir == "" {
		dir = filepath.Join(reportDir, "clusters")
	}
	duration, _ := fs.GetDuration("duration")
	settle, _ := fs.GetDuration("settle")
	if duration < 0 || settle < 0 {
		return nil, fmt.Errorf("--duration %s --settle %s: want both >= 0 (0: the case's own)", duration, settle)
	}
	return &targets.ClusterTarget{Binary: exe, Dir: dir, DurationMs: duration.Milliseconds(),
		SettleMs: settle.Milliseconds(), Progress: show.runTime}, nil
}
