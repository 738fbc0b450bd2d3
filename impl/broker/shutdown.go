package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/storage"
)

// A broker stops in one of two ways, and its next start must tell them
// apart (KIP-966's unclean-shutdown detection):
//
//   - A clean stop (SIGTERM): a controlled shutdown first (BeginShutdown:
//     the controller moves the broker's leaderships and takes it out of
//     the ISRs), then Shutdown: every log flushed to its end, the producer
//     snapshots, HW checkpoints and recovery points written, and last the
//     clean-shutdown marker, which names the incarnation that stopped.
//   - Anything else (SIGKILL, a crash, a power loss, a stop whose
//     controlled shutdown ran out of time): no marker.
//
// At start the broker takes the marker away before it writes anything
// (a crash of this process must not inherit it) and registers with the
// incarnation it named (RegisterBroker.PreviousIncarnation, Kafka's
// PreviousBrokerEpoch). The controller calls the restart clean when that
// is the incarnation it last registered: nothing the broker reported was
// lost, so it keeps its place among the eligible leader replicas. And
// with every log flushed, a cut that recovery makes after a clean stop is
// damage, never a torn write: lost data (load.go).

// cleanShutdownMarker is the file a clean shutdown writes last (Kafka's
// .kafka_cleanshutdown in each log directory).
const cleanShutdownMarker = "clean-shutdown"

// takeCleanShutdown returns the incarnation the previous process's marker
// names (0 when there is none, or it does not parse) and removes the
// marker, durably, before the caller writes anything else.
func takeCleanShutdown(d storage.Disk) (int64, error) {
	data, err := d.ReadFile(cleanShutdownMarker)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("read %s: %w", cleanShutdownMarker, err)
	}
	if err := d.Remove(cleanShutdownMarker); err != nil {
		return 0, fmt.Errorf("remove %s: %w", cleanShutdownMarker, err)
	}
	inc, err := parseCleanShutdown(data)
	if err != nil {
		// Not trusted: the restart counts as unclean, which is safe.
		return 0, nil
	}
	return inc, nil
}

func formatCleanShutdown(incarnation int64) []byte {
	return []byte("watermark clean-shutdown v1\nincarnation " + strconv.FormatInt(incarnation, 10) + "\n")
}

func parseCleanShutdown(data []byte) (int64, error) {
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 || lines[0] != "watermark clean-shutdown v1" {
		return 0, fmt.Errorf("%s: not a clean-shutdown marker", cleanShutdownMarker)
	}
	v, ok := strings.CutPrefix(lines[1], "incarnation ")
	inc, err := strconv.ParseInt(v, 10, 64)
	if !ok || err != nil || inc <= 0 {
		return 0, fmt.Errorf("%s: bad incarnation line %q", cleanShutdownMarker, lines[1])
	}
	return inc, nil
}

// shutdownState is a controlled shutdown in progress.
//
// Invariants:
//  1. begun >= 0 iff BeginShutdown was called.
//  2. approved implies begun >= 0.
type shutdownState struct {
	begun    int64 // when it began; -1: not shutting down
	asked    int   // heartbeats sent since, each asking to shut down
	approved bool  // the controller answered that the broker may stop
}

// firstRetryMs is how soon a stopping broker asks again after its first
// ask, before it falls back to its heartbeat interval (Kafka's
// BrokerLifecycleManager: 50 ms).
const firstRetryMs = 50

// BeginShutdown starts a controlled shutdown: the broker asks the
// controller to move its leaderships to other ISR members and take it out
// of the ISRs, in every heartbeat from now on (KRaft's BrokerHeartbeat
// with WantShutDown), the first at once and the second 50 ms later, until
// the controller answers that it may stop (ShutdownApproved). It serves
// meanwhile: its leaderships end as the controller moves them, as on any
// election. Calling it again does nothing.
func (b *Broker) BeginShutdown(now int64) {
	b.now = max(b.now, now)
	if b.shutdown.begun >= 0 {
		return
	}
	b.shutdown.begun = b.now
	if !b.registered {
		// Not registered: it leads nothing and is in no ISR the
		// controller knows of this process by (Kafka skips the
		// controlled shutdown from any state but RUNNING).
		b.shutdown.approved = true
		return
	}
	b.sendHeartbeat()
}

// sendHeartbeat tells the controller the broker lives, and asks to shut
// down while it is stopping.
func (b *Broker) sendHeartbeat() {
	b.lastHeartbeat = b.now
	stopping := b.shutdown.begun >= 0
	if stopping {
		b.shutdown.asked++
	}
	b.send(ControllerID, Heartbeat{Incarnation: b.incarnation, MetadataVersion: b.metaVersion, WantShutDown: stopping})
}

// heartbeatDue reports whether the next heartbeat is due.
func (b *Broker) heartbeatDue() bool {
	interval := b.cfg.HeartbeatIntervalMs
	if b.shutdown.begun >= 0 && b.shutdown.asked == 1 {
		interval = min(interval, firstRetryMs)
	}
	return b.now-b.lastHeartbeat >= interval
}

// fetchesWhileStopping reports whether the replica of tp goes on fetching
// from its leader: always, but in a controlled shutdown only while this
// broker is in tp's ISR. Out of it, a stopping follower that kept
// fetching would be proposed for the ISR again by a leader that sees it
// caught up, and its leader's HW would wait for it in every such
// proposal (Kafka's ReplicaManager stops those fetchers in a controlled
// shutdown).
func (b *Broker) fetchesWhileStopping(tp kafka.TopicPartition) bool {
	if b.shutdown.begun < 0 {
		return true
	}
	return slices.Contains(b.metadata[tp].ISR, int32(b.cfg.ID))
}

// ShuttingDown reports whether a controlled shutdown has begun.
func (b *Broker) ShuttingDown() bool { return b.shutdown.begun >= 0 }

// ShutdownApproved reports whether the controller has answered that the
// broker leads nothing any more and may stop: the caller then calls
// Shutdown.
func (b *Broker) ShutdownApproved() bool { return b.shutdown.approved }

// ShutdownOverdue reports whether the controlled shutdown has waited
// longer than ControlledShutdownTimeoutMs for the controller's approval:
// the caller stops without it (Kafka logs that it timed out and shuts
// down all the same).
func (b *Broker) ShutdownOverdue() bool {
	return b.shutdown.begun >= 0 && !b.shutdown.approved && b.now-b.shutdown.begun >= b.cfg.ControlledShutdownTimeoutMs
}

func (b *Broker) handleShutdownAnswer(m ShutdownAnswer) {
	if m.Incarnation != b.incarnation || b.shutdown.begun < 0 || !m.ShouldShutDown {
		return
	}
	if !b.shutdown.approved {
		b.events = append(b.events, Event{Broker: b.cfg.ID, Kind: "controlled-shutdown",
			Detail: fmt.Sprintf("the controller moved every leadership away after %d ms: stopping", b.now-b.shutdown.begun)})
	}
	b.shutdown.approved = true
}

// Shutdown stops the broker cleanly, after its controlled shutdown (or
// without it, when the caller gives up waiting: the data on disk is as
// safe either way). In Kafka's order (ReplicaManager, then LogManager):
// every log flushed to its end with its recovery point there, a producer
// snapshot at each log end, every HW checkpoint, and last the marker that
// says all of it is on disk. A failure anywhere leaves no marker, so the
// next start is an unclean one. The broker takes no more input after it.
func (b *Broker) Shutdown() error {
	if err := b.failpoint(FPShutdownBeforeFlush); err != nil {
		return err
	}
	for _, tp := range b.order {
		h := b.parts[tp]
		if err := h.log.Flush(); err != nil {
			return b.storageFailure(tp, err)
		}
	}
	for _, tp := range b.order {
		h := b.parts[tp]
		if err := b.snapshotProducers(h); err != nil {
			return err
		}
		h.hwDirty = true // written whether or not it moved: the next start trusts it
		if err := b.checkpointHW(h); err != nil {
			return err
		}
	}
	if err := b.failpoint(FPShutdownBeforeMarker); err != nil {
		return err
	}
	if err := b.disk.WriteFileAtomic(cleanShutdownMarker, formatCleanShutdown(b.incarnation)); err != nil {
		return &FailpointError{Name: "storage", Action: ActionCrash, Cause: fmt.Errorf("write %s: %w", cleanShutdownMarker, err)}
	}
	b.events = append(b.events, Event{Broker: b.cfg.ID, Kind: "clean-shutdown",
		Detail: fmt.Sprintf("every log flushed and checkpointed; %s written for incarnation %d", cleanShutdownMarker, b.incarnation)})
	return nil
}
