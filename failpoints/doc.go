// Package failpoints is the catalogue of the reference broker's failpoints:
// named points in impl/broker where a test makes a broker crash, lose power
// or pause at one exact step of the replication protocol.
//
// The markers themselves live in impl/broker (apply.go, produce.go and
// broker.go for the boundaries; failpoints.go re-exports the names, which
// are impl/fpname's so that run files are checked without the broker);
// this package says where each sits and what a crash there exercises.
// README.md in this directory is the full reference: value syntax, how the
// markers are compiled in, how the simulator scopes a failpoint to one
// broker and keeps runs reproducible, GO_FAILPOINTS and the HTTP endpoint
// for real processes, and the repro library (repro/, in the run-file
// format of RUNFILE.md). Catalogue holds the same entries in short, for
// tools that list them; Require and RequireBinary are for tests that need
// a failpoint build.
//
// In brief:
//
//   - Full names are github.com/watermarkhq/watermark/impl/broker/<name>
//     (broker.FailpointPath); run files and run.Failpoint use the short
//     name.
//   - Values are return("crash"), return("powerloss"),
//     return("powerloss-worst") or return("pause"), optionally with
//     ":<broker id>" to hit another broker and "@<ms>" for how long it stays
//     down, comma-separated for several at once.
//   - Markers are inert in a plain `go build ./...`; `make test` and
//     `make build` compile them in with failpoint-toolexec, which rewrites
//     them into a temporary copy at compile time. Never commit rewritten
//     files.
//   - In the simulator each broker gets its own failpoint.Hook (broker.Open's
//     fpctx), so a failpoint applies to one broker; a leading "P%" is drawn
//     from the run's seed, and count terms such as 1*return("crash") fire at
//     a fixed step, so a run replays exactly.
//   - In a real broker process (`watermark serve`, which `watermark cluster`
//     and `watermark check --target cluster` start; impl/node) built with
//     `make build`, GO_FAILPOINTS at start, or pingcap's HTTP endpoint with
//     --failpoint-http, switches them on. A crash or power loss there exits
//     the process with code 3; an action aimed at another broker is logged
//     and ignored, since a process acts only on itself.
package failpoints

import "github.com/watermarkhq/watermark/impl/broker"

// Point is one failpoint: its short name, the boundary it sits on, and what
// a crash there exercises.
type Point struct {
	Name  string // as broker.Failpoints spells it
	Where string
	Tests string
}

// Path is the full name failpoint.Enable and GO_FAILPOINTS take.
func (p Point) Path() string { return broker.FailpointPath(p.Name) }

// Catalogue lists every failpoint of impl/broker, in the order a broker
// passes them while it applies one replica's Ready.
var Catalogue = []Point{
	{broker.FPBecomeLeader,
		"applyState: a StateUpdate made the replica leader in a new epoch; nothing of it applied (epoch cache not written)",
		"a just-elected leader dies: leaders change twice in quick succession (KIP-279)"},
	{broker.FPBecomeFollower,
		"applyState: the replica became follower in a new epoch; truncation=hw already truncated in memory, not on disk",
		"restart during a leader change; with crash:<leader>, KIP-101 scenario 1's election of a truncated follower"},
	{broker.FPBeforeTruncate,
		"apply: before Log.TruncateTo; memory dropped the suffix, the log file still holds it",
		"the truncation decision is re-derived after restart, not trusted"},
	{broker.FPAfterTruncate,
		"apply: after Log.TruncateTo and its sync (the truncation is durable), before the epoch cache is rewritten and before appends",
		"power loss may bring truncated records back: KIP-101 scenario 2 (divergence)"},
	{broker.FPLeaderBeforeAppend,
		"apply on a leader: a produce has offsets in memory; nothing written, nothing answered",
		"an unanswered produce that must never appear anywhere"},
	{broker.FPLeaderAfterAppend,
		"apply on a leader: the produce is in the log (synced with FlushEveryAppend); nothing answered or sent",
		"an unacknowledged record on the old leader: truncated when it follows, or an allowed unknown outcome"},
	{broker.FPFollowerBeforeAppend,
		"apply on a follower: fetched batches in memory, not written; the acknowledging fetch not sent",
		"persist, then acknowledge: the leader must not count this follower"},
	{broker.FPFollowerAfterAppend,
		"apply on a follower: fetched batches written; leader's HW not taken or checkpointed, next fetch not sent",
		"a follower holding records nobody knows it holds, with a stale HW"},
	{broker.FPBeforeFsync,
		"apply (FlushEveryAppend) after appending, or Tick (FlushIntervalMs): before Log.Sync; never fires with neither",
		"power loss at the worst moment of a flush policy: nothing answered may be lost"},
	{broker.FPHWAdvance,
		"apply: HW moved in memory; not checkpointed, not sent, no acks=all answered, no long poll released",
		"committed but unannounced: records must survive, HW must not go back for consumers"},
	{broker.FPHWCheckpointWrite,
		"checkpointHW: before storage.WriteHW (every HW change, or every HWCheckpointIntervalMs from Tick)",
		"restart with an HW checkpoint behind what was acknowledged: the precondition of KIP-101's data loss"},
	{broker.FPISRChange,
		"apply on a leader: before AlterPartition (ISR shrink or expand) is sent; HW already uses the maximal ISR",
		"a leader dies with an ISR change the controller never saw (KIP-497)"},
	{broker.FPBeforeProduceResp,
		"handleProduce's answer (acks=1 at once, acks=all when HW passed it): the produce succeeded, its answer not queued",
		"the classic unknown outcome: committed yet unanswered; retries duplicate without idempotence"},
	{broker.FPProducerStateUpdate,
		"apply, before appending batches of an idempotent producer: the replica's producer state already counts them",
		"producer state is rebuilt from what storage holds after a restart; a retry must be appended once"},
	{broker.FPBeforeProducerSnapshot,
		"snapshotProducers (from Tick, with the HW checkpoint): before the snapshot write (no log sync)",
		"a restart with an old snapshot replays more of the log; dedup must come out the same"},
	{broker.FPAfterProducerSnapshot,
		"snapshotProducers: the producer snapshot is written",
		"a restart from this snapshot plus log replay dedups as the process before it did"},
	{broker.FPShutdownBeforeFlush,
		"Shutdown (a clean stop, after the controlled shutdown): before any log is flushed",
		"a power loss as a stop begins: no marker, so the restart is unclean and recovery may cut a torn tail"},
	{broker.FPShutdownBeforeMarker,
		"Shutdown: every log flushed, producer snapshots and HW checkpoints written; the clean-shutdown marker not yet",
		"a stop that flushed everything but left no marker: an unclean restart that lost nothing"},
}
