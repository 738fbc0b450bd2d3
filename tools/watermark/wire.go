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

// wireStage runs the wire-protocol stage against the target's first
// bootstrap broker. With only (--wire) it prints the table and the check
// is done (exit 1 when a request failed); otherwise it says in one line
// how the stage went, lists what failed, and pins each API the harness
// uses to the highest version that passed, under the user's own pins.
func wireStage(ctx context.Context, kt *conformance.KafkaTarget, only, asJSON bool, stdout, stderr io.Writer) (int, bool) {
	res, err := wire.Run(ctx, kt.Bootstrap[0], wire.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "watermark check: wire stage: %v\n", err)
		return exitViolated, true
	}
	failed := res.Failed()
	if only {
		if asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			enc.Encode(res)
		} else {
			fmt.Fprint(stdout, res.Render())
		}
		if len(failed) > 0 {
			return exitViolated, true
		}
		return exitOK, true
	}
	pins := res.Pins()
	var pinned []string
	for _, k := range harnessKeys {
		top := res.Versions[k][1]
		v, ok := pins[k]
		if _, listed := res.Versions[k]; !listed {
			continue
		}
		if !ok {
			fmt.Fprintf(stderr, "wire stage: no version of %s passed; the cases that need it will fail on it\n", kmsg.NameForKey(k))
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
	fmt.Fprintf(stderr, "wire stage against %s: %d requests, %d failed", res.Addr, len(res.Cells)+len(res.Bad), len(failed))
	if len(pinned) > 0 {
		fmt.Fprintf(stderr, "; the cases speak %v", pinned)
	}
	fmt.Fprintln(stderr, " (watermark check --wire shows the table)")
	for _, c := range failed {
		fmt.Fprintf(stderr, "  %s: %s: %s\n", c.Name(), c.Outcome, c.Why)
	}
	return 0, false
}
