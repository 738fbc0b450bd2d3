package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/report"
)

// shardFlags are the flags that differ between the shards of one check:
// every other flag must be the same in each, for merge to join them.
var shardFlags = map[string]bool{"shard": true, "report-dir": true, "junit": true, "json": true, "quiet": true, "workers": true, "cluster-dir": true}

// checkArgs are fs's flags as set, but those that may differ by shard.
func checkArgs(fs *pflag.FlagSet) []string {
	var out []string
	fs.Visit(func(f *pflag.Flag) {
		if !shardFlags[f.Name] {
			out = append(out, "--"+f.Name+"="+f.Value.String())
		}
	})
	return out
}

// writeShardFile leaves a shard's result in its report folder and says so.
func writeShardFile(fs *pflag.FlagSet, shard conformance.Shard, target string, order []string, rep *conformance.Report,
	written map[*conformance.RunResult]string, reportDir string, stderr io.Writer) {
	path, err := report.WriteShard(reportDir, report.ShardFile{Shard: shard.I, Of: shard.N, Target: target, Args: checkArgs(fs),
		Cases: order, Report: rep}, written)
	if err != nil {
		fmt.Fprintf(stderr, "watermark check: %v\n", err)
		return
	}
	fmt.Fprintf(stderr, "watermark check: shard %s's result is %s; `%s merge` joins the shards' report folders\n", shard, path, program())
}

const mergeHelp = `usage: watermark merge [flags] SHARD_REPORT_DIR...

Joins the results of a check run as shards (watermark check --shard I/N, one per CI
runner) into the result of the whole check: one table, one summary page (index.html)
linking every failed run's folder where it is now, one JUnit file, one exit status. Give
the report folder (or shard.json) of every shard; merge refuses shards of different
checks, a shard given twice, or a shard missing.

Exit status as watermark check's: 0 when every case holds, 1 when one does not (or a
shard was interrupted), 2 for bad usage or shards that do not make one check.

flags:
`

func runMerge(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("watermark merge", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	reportDir := fs.String("report-dir", "watermark-report", "where the merged summary page index.html goes")
	junit := fs.String("junit", "", "write the merged result as JUnit XML to FILE")
	asJSON := fs.Bool("json", false, "print the merged result as JSON on stdout")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return usageError(stderr, "merge", err)
	}
	if *help {
		fmt.Fprint(stdout, mergeHelp)
		fmt.Fprint(stdout, fs.FlagUsages())
		return exitOK
	}
	if fs.NArg() == 0 {
		return usageError(stderr, "merge", fmt.Errorf("no shards: give each shard's report folder"))
	}
	var files []*report.ShardFile
	var written []map[*conformance.RunResult]string
	for _, p := range fs.Args() {
		sf, w, err := report.ReadShard(p)
		if err != nil {
			return usageError(stderr, "merge", err)
		}
		files, written = append(files, sf), append(written, w)
	}
	rep, all, err := report.MergeShards(files, written)
	if err != nil {
		return usageError(stderr, "merge", err)
	}
	index, err := report.WriteIndex(*reportDir, rep, all)
	if err != nil {
		fmt.Fprintf(stderr, "watermark merge: %v\n", err)
	}
	target := files[0].Target
	if *junit != "" {
		if err := writeJUnitFile(*junit, rep, target); err != nil {
			fmt.Fprintf(stderr, "watermark merge: --junit %s: %v\n", *junit, err)
			return exitViolated
		}
	}
	if *asJSON {
		if err := writeJSONReport(stdout, rep, all, false); err != nil {
			fmt.Fprintf(stderr, "watermark merge: %v\n", err)
			return exitViolated
		}
	} else {
		fmt.Fprintf(stdout, "%d shards of %s check %s\n", len(files), target, strings.Join(files[0].Args, " "))
		printTable(stdout, rep, all)
		if target == "sim" {
			printCoverage(stdout, rep)
		}
		if index != "" {
			fmt.Fprintf(stdout, "summary: %s\n", index)
		}
	}
	if rep.Interrupted {
		fmt.Fprintf(stderr, "watermark merge: a shard was interrupted: %d of %d runs ran\n", rep.Runs, rep.Planned)
		return exitViolated
	}
	if rep.Verdict != conformance.Holds {
		return exitViolated
	}
	return exitOK
}
