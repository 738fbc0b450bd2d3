package main

import (
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
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafkawire"
	"github.com/watermarkhq/watermark/impl/node"
)

// exitFailpoint is serve's exit code when a failpoint crashed the node or
// cut its power: the harness that set the failpoint expects it.
const exitFailpoint = 3

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

Every protocol setting is a flag, named as in run files
(failpoints/RUNFILE.md) with dashes: broker.min_insync_replicas is
--min-insync-replicas. The defaults are Kafka's timeouts (heartbeat 2 s,
session timeout 9 s, replica lag 30 s, replica fetch wait 500 ms, request
timeout 30 s, HW checkpoint 5 s) with the strong recipe (min ISR 2,
truncation epoch, no unclean election); --fast starts from the harness's
instead (heartbeat 200 ms, session timeout 1500 ms, replica lag 3000 ms,
replica fetch wait 200 ms, request timeout 2000 ms, HW checkpoint 1000 ms).
The controller keeps eligible leader replicas (KIP-966) by the brokers'
min.insync.replicas: give it the brokers' --min-insync-replicas and
--advance-hw-below-min-isr (watermark cluster does).

A broker stops on SIGINT or SIGTERM with a controlled shutdown: the
controller moves its leaderships away first (within
--controlled-shutdown-timeout-ms), then every log is flushed and a
clean-shutdown marker written, so its next start is a clean one. A second
signal stops it at once, uncleanly.

flags:
`

func runServe(args []string, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	stops := make(chan struct{}, 2)
	go func() {
		for range sigs {
			stops <- struct{}{}
		}
	}()
	return serve(stops, args, stdout, stderr)
}

// serve runs one node until it stops by itself or is told to on stops:
// the first stop is a clean one (a broker's controlled shutdown, flush
// and clean-shutdown marker), a second one while that runs stops at once,
// as a crash would.
func serve(stops <-chan struct{}, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("watermark serve", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	role := fs.String("role", "broker", "broker or controller")
	id := fs.Int("id", 0, "broker: this broker's id, 1..999 (required for a broker)")
	listen := fs.String("listen", "", "address to listen on (default 127.0.0.1:9092 for a broker, 127.0.0.1:9093 for the controller)")
	advertised := fs.String("advertised", "", "broker: the address clients and other brokers dial (default: the listen address)")
	dataDir := fs.String("data-dir", "", "directory of this node's data (required)")
	secretFile := fs.String("cluster-secret-file", "", "file holding the cluster's shared secret, the same for every node (required): nodes prove they hold it before they talk; `watermark cluster` writes one, or: head -c 32 /dev/urandom > FILE")
	controllerAddr := fs.String("controller", "", "broker: the controllers' HOST:PORT, comma-separated, voter 1 first (controller.quorum.voters; required for a broker)")
	routeFlags := fs.StringArray("route", nil, "broker: ID=HOST:PORT, dial broker ID there instead of at its advertised address (repeatable; for proxies)")
	fpHTTP := fs.String("failpoint-http", "", "broker: serve pingcap/failpoint's HTTP endpoint on ADDR to switch failpoints at run time")
	maxConns := fs.Int("max-connections", node.DefaultMaxConnections, "broker: the most connections it holds open at once; past it a new one is closed (max.connections)")
	idle := fs.Duration("connections-max-idle", kafkawire.DefaultIdleTimeout, "broker: close a client connection idle this long (connections.max.idle.ms)")
	readTimeout := fs.Duration("request-read-timeout", kafkawire.DefaultRequestReadTimeout, "broker: close a client connection whose request does not all arrive within this")
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
	// The secret is read once the other flags are known good.
	readSecret := func() ([]byte, error) {
		if *secretFile == "" {
			return nil, errors.New("--cluster-secret-file is required: the file with the secret every node of the cluster shares (watermark cluster writes one; or make one with: head -c 32 /dev/urandom > FILE)")
		}
		return node.ReadSecretFile(*secretFile)
	}
	switch *role {
	case "controller":
		for _, name := range []string{"id", "advertised", "controller", "route", "failpoint-http", "max-connections", "connections-max-idle", "request-read-timeout"} {
			if fs.Changed(name) {
				return usageErr(fmt.Errorf("--%s is a broker flag; the controller does not take it", name))
			}
		}
		if *listen == "" {
			*listen = "127.0.0.1:9093"
		}
		secret, err := readSecret()
		if err != nil {
			return usageErr(err)
		}
		return serveController(stops, settings, *listen, *dataDir, secret, *verbose, stdout, stderr)
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
	switch {
	case *maxConns < 1:
		return usageErr(fmt.Errorf("--max-connections %d: want at least 1", *maxConns))
	case *idle <= 0:
		return usageErr(fmt.Errorf("--connections-max-idle %s: want a positive duration, e.g. 10m", *idle))
	case *readTimeout <= 0:
		return usageErr(fmt.Errorf("--request-read-timeout %s: want a positive duration, e.g. 30s", *readTimeout))
	}
	routes, err := parseRoutes(*routeFlags)
	if err != nil {
		return usageErr(err)
	}
	if *listen == "" {
		*listen = "127.0.0.1:9092"
	}
	secret, err := readSecret()
	if err != nil {
		return usageErr(err)
	}
	bcfg := brokerConfig(settings, *id)
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
		Secret:      secret,
		Broker:      bcfg,
		DataDir:     *dataDir,
		Listen:      *listen,
		Advertised:  *advertised,
		Controllers: strings.Split(*controllerAddr, ","),
		Routes:      routes,
		// A process is one broker: failpoints set in its environment are
		// its own.
		Failpoints:         true,
		MaxConnections:     *maxConns,
		IdleTimeout:        *idle,
		RequestReadTimeout: *readTimeout,
		Logf:               logf,
	})
	if err != nil {
		fmt.Fprintf(stderr, "watermark serve: %v\n", err)
		return exitViolated
	}
	fmt.Fprintf(stdout, "broker %d listening on %s\n", *id, b.Addr())
	select {
	case <-stops:
		return stopBroker(b, stops, logf)
	case <-b.Done():
	}
	return stopped(fmt.Sprintf("broker %d", *id), b.Err(), stderr)
}

// brokerConfig is broker id's configuration under s.
func brokerConfig(s run.Settings, id int) broker.Config {
	return broker.Config{Settings: s.Broker, ID: broker.NodeID(id)}
}

// stopBroker stops b cleanly (node.Broker.Stop), or at once on a second
// stop, and says which happened. Either way the exit is 0: the operator
// asked for it.
func stopBroker(b *node.Broker, stops <-chan struct{}, logf func(string, ...any)) int {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	go func() { _ = b.Stop() }()
	select {
	case <-b.Done():
	case <-stops:
		logf("a second stop signal: stopping at once, uncleanly (nothing flushed, no clean-shutdown marker)")
		_ = b.Close()
	}
	if !errors.Is(b.Err(), node.ErrStopped) {
		logf("broker stopped uncleanly: %v", b.Err())
	}
	return exitOK
}

func serveController(stops <-chan struct{}, s run.Settings, listen, dataDir string, secret []byte, verbose bool, stdout, stderr io.Writer) int {
	ccfg := s.ControllerConfig()
	c, err := node.StartController(node.ControllerConfig{
		Secret:     secret,
		Controller: ccfg,
		Quorum:     s.Quorum,
		DataDir:    dataDir,
		Listen:     listen,
		Logf:       nodeLogf(stderr, "", verbose), // the node names itself in every line
	})
	if err != nil {
		fmt.Fprintf(stderr, "watermark serve: %v\n", err)
		return exitViolated
	}
	fmt.Fprintf(stdout, "controller listening on %s\n", c.Addr())
	select {
	case <-stops:
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
