package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/wire"
)

// harnessKeys are the APIs the semantic cases speak: the ones the wire
// stage's result pins.
var harnessKeys = []int16{
	kmsg.Produce.Int16(), kmsg.Fetch.Int16(), kmsg.ListOffsets.Int16(), kmsg.Metadata.Int16(),
	kmsg.OffsetCommit.Int16(), kmsg.OffsetFetch.Int16(), kmsg.FindCoordinator.Int16(), kmsg.JoinGroup.Int16(),
	kmsg.Heartbeat.Int16(), kmsg.LeaveGroup.Int16(), kmsg.SyncGroup.Int16(), kmsg.InitProducerID.Int16(),
	kmsg.CreateTopics.Int16(),
}

// wireOnly is `check --wire`: the whole stage against the target's first
// bootstrap broker, its table printed; exit 1 when a request failed.
func wireOnly(ctx context.Context, kt *conformance.KafkaTarget, asJSON bool, stdout, stderr io.Writer) int {
	res, err := wire.Run(ctx, kt.Bootstrap[0], wire.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "watermark check: wire stage: %v\n", err)
		return exitViolated
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(res)
	} else {
		fmt.Fprint(stdout, res.Render())
	}
	if len(res.Failed()) > 0 || res.Died != nil {
		return exitViolated
	}
	return exitOK
}

// wireBefore runs the stage's well-formed requests before the cases and
// pins each API the harness uses to the highest version that passed,
// under the user's own pins. A broker that dies of a request is named as
// having died of it; with a restart command it is started again and the
// check goes on. The bad requests, which may kill a broker, wait for
// wireAfter. res is nil when the stage could not start (nothing answers
// the handshake: the caller's Probe says why).
func wireBefore(ctx context.Context, kt *conformance.KafkaTarget, stderr io.Writer) (res *wire.Result, code int, done bool) {
	res, err := wire.WellFormed(ctx, kt.Bootstrap[0], wire.Options{})
	if err != nil {
		return nil, 0, false
	}
	fmt.Fprintf(stderr, "%s (well-formed requests; the bad ones are sent after the cases; --wire shows the table)\n", res.Summary())
	for _, c := range res.Failed() {
		fmt.Fprintf(stderr, "  %s: %s: %s\n", c.Name(), c.Outcome, c.Why)
	}
	if res.Died != nil {
		fmt.Fprintf(stderr, "wire stage: the broker at %s died of a well-formed request (%s): a finding about the broker, not a setup error\n", res.Addr, res.Died.After)
		if err := kt.RestartBroker(ctx, res.Addr, res.NodeID); err != nil {
			fmt.Fprintf(stderr, "wire stage: could not start it again (%v); give --restart-cmd to go on with the cases after such a crash\n", err)
			return res, exitViolated, true
		}
		fmt.Fprintf(stderr, "wire stage: broker %d restarted (by the restart command); the cases go on\n", res.NodeID)
	}
	pinFromWire(kt, res, stderr)
	return res, 0, false
}

// pinFromWire caps each API the harness uses at the highest version the
// stage passed.
func pinFromWire(kt *conformance.KafkaTarget, res *wire.Result, stderr io.Writer) {
	pins, plain := res.Pins(), res.PlainPins()
	untested := map[int16]bool{}
	for _, k := range res.Untested() {
		untested[k] = true
	}
	var pinned []string
	for _, k := range harnessKeys {
		top := res.Versions[k][1]
		v, ok := pins[k]
		if _, listed := res.Versions[k]; !listed {
			continue
		}
		if !ok {
			if v, ok = plain[k]; ok {
				fmt.Fprintf(stderr, "wire stage: %s answers some of the stage's error-shaped requests wrongly (the table shows which); the cases speak v%d, whose plain requests passed\n", kmsg.NameForKey(k), v)
			}
		}
		if !ok {
			if untested[k] {
				fmt.Fprintf(stderr, "wire stage: %s was not tested (the broker had died); the cases speak its highest listed version\n", kmsg.NameForKey(k))
			} else {
				fmt.Fprintf(stderr, "wire stage: no version of %s passed; the cases that need it will fail on it\n", kmsg.NameForKey(k))
			}
			continue
		}
		if user, set := kt.MaxVersions[k]; set && user <= v {
			continue
		}
		if v < top {
			if kt.MaxVersions == nil {
				kt.MaxVersions = map[int16]int16{}
			}
			kt.MaxVersions[k] = v
			pinned = append(pinned, fmt.Sprintf("%s v%d", kmsg.NameForKey(k), v))
		}
	}
	if len(pinned) > 0 {
		fmt.Fprintf(stderr, "wire stage: the cases speak %v, the highest versions that passed\n", pinned)
	}
}

// wireAfter sends the stage's bad requests once the cases are done, and
// prints the whole stage's count, the same as --wire's, and what failed
// among the bad requests; a broker that died of one is named.
func wireAfter(ctx context.Context, res *wire.Result, stderr io.Writer) {
	if res == nil {
		return
	}
	wellFormed := len(res.Failed())
	res.BadRequests(ctx, wire.Options{})
	fmt.Fprintln(stderr, res.Summary())
	for _, c := range res.Failed()[wellFormed:] {
		fmt.Fprintf(stderr, "  %s: %s: %s\n", c.Name(), c.Outcome, c.Why)
	}
}
