package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"github.com/watermarkhq/watermark/conformance/cluster"
)

const clusterHelp = `usage: watermark cluster [--brokers N] [--dir DIR] [--proxies] [settings flags]

Runs a local real cluster: one ` + "`watermark serve`" + ` process for the controller
and one per broker, on loopback ports picked at start, each with its data
and its log file under --dir. Prints the bootstrap addresses for Kafka
clients, then runs until Ctrl-C (SIGINT) or SIGTERM, stops every node and
exits 0.

If a node dies on its own (a failpoint crash, a bug), the command says which
and shows the end of its log, and keeps the others running: you may be
testing failover. Ctrl-C still stops the rest.

Failpoints: --env GO_FAILPOINTS='<full name>=<term>' switches them on in
every broker at start (a binary built with ` + "`make build`" + `);
--failpoint-http gives each broker an HTTP endpoint to switch them at run
time. See failpoints/README.md.

Every protocol setting is a flag, as for ` + "`watermark serve`" + `; the
defaults are Kafka's timeouts (heartbeat 2 s, session timeout 9 s, replica
lag 30 s, replica fetch wait 500 ms, request timeout 30 s, HW checkpoint
5 s) with the strong recipe (min ISR 2, truncation epoch, no unclean
election). --fast starts from the harness's timeouts instead (heartbeat
200 ms, session 1500 ms, replica lag 3000 ms, ...), for runs of seconds.

flags:
`

func runCluster(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runClusterCtx(ctx, args, stdout, stderr)
}

// runClusterCtx runs the cluster until ctx ends.
func runClusterCtx(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("watermark cluster", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	brokers := fs.Int("brokers", 3, "how many brokers (ids 1..N)")
	dir := fs.String("dir", "", "where the nodes keep their data and logs (default: a new temporary directory, kept at exit)")
	proxies := fs.Bool("proxies", false, "put a TCP proxy on every link (clients, broker to broker, broker to controller), as the harness does for network faults")
	fpHTTP := fs.Bool("failpoint-http", false, "give each broker pingcap/failpoint's HTTP endpoint on a port of its own")
	env := fs.StringArray("env", nil, "KEY=VALUE added to every broker's environment (repeatable), e.g. GO_FAILPOINTS=...")
	binary := fs.String("binary", "", "the watermark executable that runs the nodes (default: this one)")
	control := fs.String("control", "", "serve HTTP fault controls on ADDR (e.g. 127.0.0.1:0): /kill/{id}, /stop/{id} (SIGTERM: a clean stop), /restart/{id}, /pause/{id}, /resume/{id}, /isolate/{id} (with --proxies), /heal; for watermark check --target kafka's --kill-cmd 'curl -fsS http://ADDR/kill/{id}' and friends")
	targetFile := fs.String("target-file", "", "write a target file for watermark check --target kafka --target-file to PATH: the bootstrap, every setting, and with --control the fault commands through it (curl)")
	sf := addSettingsFlags(fs)
	help := fs.BoolP("help", "h", false, "show this help")

	usageErr := func(err error) int {
		fmt.Fprintf(stderr, "watermark cluster: %v\n\nRun `watermark cluster --help` for every flag.\n", err)
		return exitUsage
	}
	if err := fs.Parse(args); err != nil {
		return usageErr(err)
	}
	if *help {
		fmt.Fprint(stdout, clusterHelp)
		fmt.Fprint(stdout, fs.FlagUsages())
		return exitOK
	}
	if fs.NArg() > 0 {
		return usageErr(fmt.Errorf("unexpected argument %q: cluster takes only flags", fs.Arg(0)))
	}
	if *brokers < 1 || *brokers > 99 {
		return usageErr(fmt.Errorf("--brokers %d: want 1..99", *brokers))
	}
	for _, kv := range *env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usageErr(fmt.Errorf("--env %q: want KEY=VALUE", kv))
		}
	}
	settings, err := sf.settings()
	if err != nil {
		return usageErr(err)
	}
	if *binary == "" {
		if *binary, err = os.Executable(); err != nil {
			fmt.Fprintf(stderr, "watermark cluster: cannot find this executable (%v): pass --binary\n", err)
			return exitViolated
		}
	}

	out := &syncWriter{w: stdout}
	c, err := cluster.Start(ctx, cluster.Options{
		Binary:        *binary,
		Brokers:       *brokers,
		Dir:           *dir,
		Settings:      settings,
		Env:           *env,
		Proxies:       *proxies,
		FailpointHTTP: *fpHTTP,
		OnExit: func(e cluster.Exit) {
			fmt.Fprintf(out, "%s; the other nodes keep running. End of its log:\n%s\n", e, e.LogTail)
		},
	})
	if err != nil {
		fmt.Fprintf(stderr, "watermark cluster: %v\n", err)
		return exitViolated
	}
	fmt.Fprintf(out, "bootstrap: %s\n", strings.Join(c.Bootstrap(), ","))
	fmt.Fprintf(out, "data and logs: %s\n", c.Dir())
	c.Describe(out)
	controlAddr := ""
	if *control != "" {
		addr, err := serveControl(ctx, *control, c)
		if err != nil {
			fmt.Fprintf(stderr, "watermark cluster: --control %s: %v\n", *control, err)
			_ = c.Stop()
			return exitUsage
		}
		fmt.Fprintf(out, "control: http://%s (kill, stop, restart, pause, resume, isolate: /VERB/{id}; /heal)\n", addr)
		controlAddr = addr
	}
	if *targetFile != "" {
		if err := writeTargetFile(*targetFile, c.Bootstrap(), controlAddr, *proxies, settings); err != nil {
			fmt.Fprintf(stderr, "watermark cluster: --target-file: %v\n", err)
			_ = c.Stop()
			return exitUsage
		}
		fmt.Fprintf(out, "target file: %s\n", *targetFile)
	}
	fmt.Fprintln(out, "Ctrl-C stops the cluster.")

	<-ctx.Done()
	fmt.Fprintln(out, "stopping the cluster")
	start := time.Now()
	if err := c.Stop(); err != nil {
		fmt.Fprintf(stderr, "watermark cluster: stop: %v\n", err)
		return exitViolated
	}
	fmt.Fprintf(out, "stopped in %s; data and logs are in %s\n", time.Since(start).Round(time.Millisecond), c.Dir())
	return exitOK
}

// syncWriter serialises writes from the command and from the cluster's
// exit reports.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
