package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/pingcap/failpoint"
	"github.com/spf13/pflag"
	"github.com/watermarkhq/watermark/conformance/cluster"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/node"
	"github.com/watermarkhq/watermark/impl/partition"
)

// exitFailpoint is serve's exit code when a failpoint crashed the node or
// cut its power: the harness that set the failpoint expects it.
const exitFailpoint = 3

// settingsFlags binds the protocol settings to flags shared by serve and
// cluster.
type settingsFlags struct {
	s             cluster.Settings
	truncation    string
	producerState string
}

func addSettingsFlags(fs *pflag.FlagSet) *settingsFlags {
	d := cluster.DefaultSettings()
	f := &settingsFlags{s: d}
	fs.IntVar(&f.s.MinInsyncReplicas, "min-insync-replicas", d.MinInsyncReplicas, "broker: ISR members an acks=all produce needs (min.insync.replicas)")
	fs.StringVar(&f.truncation, "truncation", d.Truncation.String(), "broker: how a follower finds where its log diverges: "+strings.Join(partition.TruncationNames, ", "))
	fs.Int64Var(&f.s.ReplicaLagTimeMaxMs, "replica-lag-time-max-ms", d.ReplicaLagTimeMaxMs, "broker: a follower this far behind leaves the ISR (replica.lag.time.max.ms)")
	fs.Int64Var(&f.s.ReplicaFetchWaitMaxMs, "replica-fetch-wait-max-ms", d.ReplicaFetchWaitMaxMs, "broker: how long a follower's fetch waits for data (replica.fetch.wait.max.ms)")
	fs.Int64Var(&f.s.RequestTimeoutMs, "request-timeout-ms", d.RequestTimeoutMs, "broker: how long an acks=all produce waits for the ISR")
	fs.Int64Var(&f.s.HeartbeatIntervalMs, "heartbeat-interval-ms", d.HeartbeatIntervalMs, "broker: heartbeat period to the controller")
	fs.Int64Var(&f.s.HWCheckpointIntervalMs, "hw-checkpoint-interval-ms", d.HWCheckpointIntervalMs, "broker: HW checkpoint period; 0 writes it at every HW change")
	fs.BoolVar(&f.s.FlushEveryAppend, "flush-every-append", d.FlushEveryAppend, "broker: fsync the log after every append")
	fs.Int64Var(&f.s.FlushIntervalMs, "flush-interval-ms", d.FlushIntervalMs, "broker: fsync the log this often (0: never, leave it to the OS)")
	fs.BoolVar(&f.s.AdvanceHWBelowMinISR, "advance-hw-below-min-isr", d.AdvanceHWBelowMinISR, "broker: let HW advance while the ISR is below min ISR (unsafe variant)")
	fs.StringVar(&f.producerState, "producer-state", d.ProducerState.String(), "broker: idempotent-producer state: replicated, or leader-only (the dedup-across-leader-change bug)")
	fs.Int32Var(&f.s.OffsetsTopicPartitions, "offsets-topic-partitions", d.OffsetsTopicPartitions, "broker: partitions of __consumer_offsets, created at the first FindCoordinator (offsets.topic.num.partitions)")
	fs.IntVar(&f.s.OffsetsTopicReplicationFactor, "offsets-topic-replication-factor", d.OffsetsTopicReplicationFactor, "broker: replication factor of __consumer_offsets; groups have no coordinator until that many brokers are up (offsets.topic.replication.factor)")
	fs.Int64Var(&f.s.GroupMinSessionTimeoutMs, "group-min-session-timeout-ms", d.GroupMinSessionTimeoutMs, "broker: the shortest session.timeout.ms a group member may ask for (group.min.session.timeout.ms; Kafka: 6000)")
	fs.Int64Var(&f.s.SessionTimeoutMs, "session-timeout-ms", d.SessionTimeoutMs, "controller: a broker silent this long is dead (broker.session.timeout.ms)")
	fs.BoolVar(&f.s.UncleanLeaderElection, "unclean-leader-election", d.UncleanLeaderElection, "controller: elect a replica outside the ISR when no ISR member is alive (loses data)")
	fs.BoolVar(&f.s.KeepISROnRestart, "keep-isr-on-restart", d.KeepISROnRestart, "controller: a restarted broker keeps its ISR memberships (pre-KIP-903; unsafe)")
	fs.BoolVar(&f.s.AutoLeaderRebalance, "auto-leader-rebalance", d.AutoLeaderRebalance, "controller: move leadership back to the preferred replica")
	return f
}

// settings parses the string flags and checks the whole.
func (f *settingsFlags) settings() (cluster.Settings, error) {
	s := f.s
	var err error
	if s.Truncation, err = partition.ParseTruncation(f.truncation); err != nil {
		return s, fmt.Errorf("--truncation: %v", err)
	}
	if s.ProducerState, err = partition.ParseProducerState(f.producerState); err != nil {
		return s, fmt.Errorf("--producer-state: %v", err)
	}
	return s, s.Validate()
}

const serveHelp = `usage: watermark serve --data-dir DIR [--role broker|controller] [flags]

Runs one node of a real cluster in the foreground: a broker (Kafka clients
connect to it) or the controller. Start the controller first, then each
broker with --controller pointing at it; ` + "`watermark cluster`" + ` does all of it.

It prints "broker N listening on ADDR" (or "controller listening on ADDR")
on stdout once it serves, and runs until SIGINT or SIGTERM (exit 0), or
until it stops by itself: a failpoint crash or power loss exits 3, any
other failure 1. Bad flags exit 2.

Failpoints (binaries built with ` + "`make build`" + `) are switched on with
GO_FAILPOINTS='<full name>=<term>;...' at start, or at run time through
--failpoint-http: curl -X PUT -d '1*return("crash")' http://ADDR/<full name>.
Full names are github.com/watermarkhq/watermark/impl/broker/<name>; see
failpoints/README.md.

Defaults suit tests on one machine: heartbeat 100 ms, session timeout
1500 ms, replica lag 3000 ms, replica fetch wait 200 ms, request timeout
2000 ms, HW checkpoint 1000 ms, min ISR 2, truncation epoch.

flags:
`

func runServe(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, args, stdout, stderr)
}

// serve runs one node until ctx ends or the node stops.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("watermark serve", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	role := fs.String("role", "broker", "broker or controller")
	id := fs.Int("id", 0, "broker: this broker's id, 1..999 (required for a broker)")
	listen := fs.String("listen", "", "address to listen on (default 127.0.0.1:9092 for a broker, 127.0.0.1:9093 for the controller)")
	advertised := fs.String("advertised", "", "broker: the address clients and other brokers dial (default: the listen address)")
	dataDir := fs.String("data-dir", "", "directory of this node's data (required)")
	controllerAddr := fs.String("controller", "", "broker: the controller's HOST:PORT (required for a broker)")
	routeFlags := fs.StringArray("route", nil, "broker: ID=HOST:PORT, dial broker ID there instead of at its advertised address (repeatable; for proxies)")
	fpHTTP := fs.String("failpoint-http", "", "broker: serve pingcap/failpoint's HTTP endpoint on ADDR to switch failpoints at run time")
	verbose := fs.Bool("verbose", false, "log to stderr")
	sf := addSettingsFlags(fs)
	help := fs.BoolP("help", "h", false, "show this help")

	usageErr := func(err error) int {
		fmt.Fprintf(stderr, "watermark serve: %v\n\nRun `watermark serve --help` for every flag.\n", err)
		return exitUsage
	}
	if err := fs.Parse(args); err != nil {
		return usageErr(err)
	}
	if *help {
		fmt.Fprint(stdout, serveHelp)
		fmt.Fprint(stdout, fs.FlagUsages())
		return exitOK
	}
	if fs.NArg() > 0 {
		return usageErr(fmt.Errorf("unexpected argument %q: serve takes only flags", fs.Arg(0)))
	}
	settings, err := sf.settings()
	if err != nil {
		return usageErr(err)
	}
	if *dataDir == "" {
		return usageErr(errors.New("--data-dir is required: where this node keeps its data"))
	}
	switch *role {
	case "controller":
		for _, name := range []string{"id", "advertised", "controller", "route", "failpoint-http"} {
			if fs.Changed(name) {
				return usageErr(fmt.Errorf("--%s is a broker flag; the controller does not take it", name))
			}
		}
		if *listen == "" {
			*listen = "127.0.0.1:9093"
		}
		return serveController(ctx, settings, *listen, *dataDir, *verbose, stdout, stderr)
	case "broker":
	default:
		return usageErr(fmt.Errorf("--role %q: want broker or controller", *role))
	}
	if *id < 1 || *id >= int(broker.ClientIDBase) {
		return usageErr(fmt.Errorf("--id %d: want a broker id in 1..%d", *id, broker.ClientIDBase-1))
	}
	if *controllerAddr == "" {
		return usageErr(errors.New("--controller is required for a broker: the controller's HOST:PORT (start one with --role controller)"))
	}
	routes, err := parseRoutes(*routeFlags)
	if err != nil {
		return usageErr(err)
	}
	if *listen == "" {
		*listen = "127.0.0.1:9092"
	}
	bcfg, err := settings.BrokerConfig(*id)
	if err != nil {
		return usageErr(err)
	}
	logf := nodeLogf(stderr, fmt.Sprintf("broker %d: ", *id), *verbose)

	if *fpHTTP != "" {
		ln, err := net.Listen("tcp", *fpHTTP)
		if err != nil {
			fmt.Fprintf(stderr, "watermark serve: --failpoint-http %s: %v\n", *fpHTTP, err)
			return exitViolated
		}
		srv := &http.Server{Handler: &failpoint.HttpHandler{}}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		logf("failpoint HTTP endpoint on %s", ln.Addr())
	}

	b, err := node.StartBroker(node.BrokerConfig{
		Broker:     bcfg,
		DataDir:    *dataDir,
		Listen:     *listen,
		Advertised: *advertised,
		Controller: *controllerAddr,
		Routes:     routes,
		// A process is one broker: failpoints set in its environment are
		// its own.
		Failpoints: true,
		Logf:       logf,
	})
	if err != nil {
		fmt.Fprintf(stderr, "watermark serve: %v\n", err)
		return exitViolated
	}
	fmt.Fprintf(stdout, "broker %d listening on %s\n", *id, b.Addr())
	select {
	case <-ctx.Done():
		_ = b.Close()
		return exitOK
	case <-b.Done():
	}
	return stopped(fmt.Sprintf("broker %d", *id), b.Err(), stderr)
}

func serveController(ctx context.Context, s cluster.Settings, listen, dataDir string, verbose bool, stdout, stderr io.Writer) int {
	ccfg, err := s.ControllerConfig()
	if err != nil {
		fmt.Fprintf(stderr, "watermark serve: %v\n", err)
		return exitUsage
	}
	c, err := node.StartController(node.ControllerConfig{
		Controller: ccfg,
		DataDir:    dataDir,
		Listen:     listen,
		Logf:       nodeLogf(stderr, "controller: ", verbose),
	})
	if err != nil {
		fmt.Fprintf(stderr, "watermark serve: %v\n", err)
		return exitViolated
	}
	fmt.Fprintf(stdout, "controller listening on %s\n", c.Addr())
	select {
	case <-ctx.Done():
		_ = c.Close()
		return exitOK
	case <-c.Done():
	}
	return stopped("controller", c.Err(), stderr)
}

// stopped reports why a node stopped by itself and picks the exit code.
func stopped(name string, err error, stderr io.Writer) int {
	var fe *broker.FailpointError
	if errors.As(err, &fe) {
		fmt.Fprintf(stderr, "watermark serve: %s stopped at failpoint %s (%s): %v\n", name, broker.FailpointPath(fe.Name), fe.Action, err)
		return exitFailpoint
	}
	fmt.Fprintf(stderr, "watermark serve: %s stopped: %v\n", name, err)
	return exitViolated
}

// parseRoutes reads --route ID=HOST:PORT flags.
func parseRoutes(flags []string) (map[int32]string, error) {
	routes := map[int32]string{}
	for _, r := range flags {
		idStr, addr, ok := strings.Cut(r, "=")
		id, err := strconv.Atoi(idStr)
		if !ok || err != nil || id < 1 || addr == "" {
			return nil, fmt.Errorf("--route %q: want ID=HOST:PORT with a broker id >= 1, e.g. --route 2=127.0.0.1:19092", r)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("--route %q: %v", r, err)
		}
		if _, dup := routes[int32(id)]; dup {
			return nil, fmt.Errorf("--route: broker %d is routed twice", id)
		}
		routes[int32(id)] = addr
	}
	return routes, nil
}

// nodeLogf logs to w with prefix when verbose, and discards otherwise.
func nodeLogf(w io.Writer, prefix string, verbose bool) func(string, ...any) {
	if !verbose {
		return nil
	}
	l := log.New(w, prefix, log.Ltime|log.Lmicroseconds)
	return l.Printf
}
