package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/report"
	"github.com/watermarkhq/watermark/conformance/search"
	"github.com/watermarkhq/watermark/impl/broker"
)

// checkRandom is `watermark check --random N`: the standing random check
// on the safe settings (search.Random). Its report is the check's, with
// one case, "random"; a failed run's replay is its run file.
func checkRandom(ctx context.Context, fs *pflag.FlagSet, runs int, seed uint64, workers int, checkTimeout time.Duration,
	reportDir string, asJSON bool, junit string, shard conformance.Shard, show *progress, stdout, stderr io.Writer) int {
	for _, f := range []string{"case", "variant", "set", "seeds", "validate-protocol"} {
		if fs.Changed(f) {
			return usageError(stderr, "check", fmt.Errorf("--random runs its own schedules on the safe settings: drop --%s (hunt a variant's bug with `watermark search --variant`)", f))
		}
	}
	var target search.Runner
	targetName := "sim"
	switch t, _ := fs.GetString("target"); t {
	case "sim":
	case "cluster":
		ct, err := clusterTarget(fs, reportDir, show)
		if err != nil {
			return usageError(stderr, "check", err)
		}
		target, targetName = ct, "cluster"
	default:
		return usageError(stderr, "check", fmt.Errorf("--random runs on --target sim or cluster, not %s: its schedules need a cluster the harness owns (disks, signals)", t))
	}
	if runs < 1 {
		return usageError(stderr, "check", fmt.Errorf("--random %d: want at least 1", runs))
	}
	if !fs.Changed("seed") {
		seed = 1
	}
	if !shard.Whole() {
		// The shard's share of the budget, on its own seeds: the shards
		// together draw the seeds of the whole search (each guided by
		// its own coverage).
		offset, count := shard.Budget(runs)
		if count == 0 {
			return usageError(stderr, "check", fmt.Errorf("--random %d --shard %s: the shard has no run; give --random at least %d", runs, shard, shard.N))
		}
		seed, runs = seed+uint64(offset), count
	}
	rep, err := search.Random(search.RandomOptions{Runs: runs, FirstSeed: seed, Workers: workers, CheckTimeout: checkTimeout,
		NoFailpoints: !broker.FailpointsCompiled(), Context: ctx, Target: target,
		Progress: func(done, total int, r *judge.RunResult) {
			show.update(conformance.Progress{Phase: conformance.PhaseDone, Case: r.Case, Seed: r.Seed, Done: done, Total: total, Result: r})
		}})
	show.done()
	if err != nil {
		fmt.Fprintf(stderr, "watermark check: %v\n", err)
		return exitViolated
	}
	c := search.RandomCase()
	written := map[*conformance.RunResult]string{}
	for _, r := range rep.Cases[0].Failed {
		dir := report.RunDir(reportDir, r)
		r.Replay = fmt.Sprintf("%s repro %s", program(), filepath.Join(dir, "run.yaml"))
		if target != nil {
			// The same schedule on a fresh cluster (fresh draws only).
			r.Replay = fmt.Sprintf("%s check --target cluster --random 1 --seed %d", program(), r.Seed)
		}
		if _, err := report.WriteRun(reportDir, r, c); err != nil {
			fmt.Fprintf(stderr, "watermark check: %v\n", err)
		}
		written[r] = dir
	}
	if !shard.Whole() {
		writeShardFile(fs, shard, targetName, []string{c.Name}, rep, written, reportDir, stderr)
	}
	index, err := report.WriteIndex(reportDir, rep, written)
	if err != nil {
		fmt.Fprintf(stderr, "watermark check: %v\n", err)
	}
	if junit != "" {
		if err := writeJUnitFile(junit, rep, targetName); err != nil {
			fmt.Fprintf(stderr, "watermark check: --junit %s: %v\n", junit, err)
			return exitViolated
		}
	}
	if asJSON {
		if err := writeJSONReport(stdout, rep, written, false); err != nil {
			fmt.Fprintf(stderr, "watermark check: %v\n", err)
			return exitViolated
		}
	} else {
		printTable(stdout, rep, written)
		printCoverage(stdout, rep)
		if index != "" {
			fmt.Fprintf(stdout, "summary: %s\n", index)
		}
	}
	switch {
	case rep.Interrupted:
		fmt.Fprintf(stderr, "watermark check: interrupted after %d of %d runs; what ran is reported above.\n", rep.Runs, rep.Planned)
		return exitInterrupted
	case rep.Verdict != conformance.Holds:
		return exitViolated
	}
	return exitOK
}
