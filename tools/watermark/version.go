package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/watermarkhq/watermark/impl/broker"
)

// runVersion prints what this binary is: its module version, the Go that
// built it, and whether failpoints are compiled in (a harness checks this
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
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	fp := "no (build with `make build` to compile them in)"
	if broker.FailpointsCompiled() {
		fp = "yes"
	}
	fmt.Fprintf(stdout, "watermark %s\ngo: %s\nfailpoints compiled: %s\n", v, runtime.Version(), fp)
	return exitOK
}
