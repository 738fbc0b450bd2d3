// Command watermark checks Kafka-compatible brokers against the replication
// protocol's guarantees. `watermark check` runs the conformance cases on the
// embedded, simulated reference cluster.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Exit codes.
const (
	exitOK       = 0 // every case holds
	exitViolated = 1 // a case was violated, or a checker could not decide
	exitUsage    = 2 // bad flags, unknown case
)

// command is one subcommand.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{
	"check":   {"run the conformance cases on the simulated reference cluster", runCheck},
	"cases":   {"list the conformance cases", runCases},
	"verify":  {"re-check a saved history (JSON lines) for anomalies and linearizability", runVerify},
	"repro":   {"run run files (failpoints/RUNFILE.md) and compare the outcome with their expect", runRepro},
	"search":  {"random search for a violation on an unsafe variant (random faults and failpoints)", runSearch},
	"explore": {"explore every state of the abstract protocol model within bounds and check its invariants", runExplore},
	"serve":   {"run one node (broker or controller) of a real cluster in the foreground", runServe},
	"cluster": {"run a local real cluster (controller and N brokers) until Ctrl-C", runCluster},
	"merge":   {"join the results of a check run as shards (--shard I/N) into one report", runMerge},
	"version": {"print the version and whether failpoints are compiled in", runVersion},
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "watermark: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return cmd.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "watermark: a checked reference for Kafka's replication protocol")
	fmt.Fprintln(w, "\nusage: watermark <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun `watermark <command> --help` for a command's flags.")
}

// plural writes "1 seed" / "2 seeds".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}
