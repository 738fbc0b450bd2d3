package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/watermarkhq/watermark/impl/broker"
)

// runVersion prints what this binary is: its module version and the commit
// it was built from, the Go that built it, and whether failpoints are
// compiled in (a harness checks this
// before it relies on GO_FAILPOINTS in the processes it starts).
func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(stdout, "usage: watermark version\n\nPrints the version, the Go version and whether failpoints are compiled in.")
		return exitOK
	}
	if len(args) > 0 {
		fmt.Fprintf(stderr, "watermark version: unexpected argument %q\n", args[0])
		return exitUsage
	}
	v := version()
	fp := "no (build with `make build` to compile them in)"
	if broker.FailpointsCompiled() {
		fp = "yes"
	}
	fmt.Fprintf(stdout, "watermark %s\ngo: %s\nfailpoints compiled: %s\n", v, runtime.Version(), fp)
	return exitOK
}

// version is the module's version, with the commit the binary was built
// from when Go recorded it (a build in a git checkout): "(devel) commit
// 0feccf3d1a2b (2026-12-01T20:41:07Z), modified" for a build with changes
// not committed.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	rev := vcs["vcs.revision"]
	if rev == "" {
		return v + " (no commit recorded: built outside a git checkout, or with -buildvcs=false)"
	}
	v += " commit " + rev[:min(12, len(rev))]
	if t := vcs["vcs.time"]; t != "" {
		v += " (" + t + ")"
	}
	if vcs["vcs.modified"] == "true" {
		v += ", modified"
	}
	return v
}
