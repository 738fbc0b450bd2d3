// Package fpname names the reference broker's failpoints: the names its
// markers (impl/broker) fire under, and their full names; and it tells
// whether the build has its markers rewritten (Compiled). It imports
// nothing of the reference (only pingcap/failpoint, for its probe), so
// that a run description (conformance/run) can check the failpoints a run
// names, and a harness (conformance/cluster) whether its binary has them,
// without compiling the broker.
// failpoints/README.md documents each, with what a crash there exercises.
package fpname

// The failpoint names, relative to impl/broker's import path (Path gives
// the full name that failpoint.Enable and GO_FAILPOINTS take).
const (
	LeaderBeforeAppend   = "leaderBeforeAppend"
	LeaderAfterAppend    = "leaderAfterAppend"
	BeforeProduceResp    = "beforeProduceResponse"
	FollowerBeforeAppend = "followerBeforeAppend"
	FollowerAfterAppend  = "followerAfterAppend"
	BeforeFsync          = "beforeFsync"
	HWAdvance            = "hwAdvance"
	HWCheckpointWrite    = "hwCheckpointWrite"
	BeforeTruncate       = "beforeTruncate"
	AfterTruncate        = "afterTruncate"
	ISRChange            = "isrChange"
	BecomeLeader         = "becomeLeader"
	BecomeFollower       = "becomeFollower"
	// Producer state (the idempotent producer).
	ProducerStateUpdate    = "producerStateUpdate"
	BeforeProducerSnapshot = "beforeProducerSnapshot"
	AfterProducerSnapshot  = "afterProducerSnapshot"
	// A clean shutdown (Shutdown): before the logs are flushed, and
	// before the clean-shutdown marker is written after them.
	ShutdownBeforeFlush  = "shutdownBeforeFlush"
	ShutdownBeforeMarker = "shutdownBeforeMarker"
)

// All lists every failpoint name.
var All = []string{
	LeaderBeforeAppend, LeaderAfterAppend, BeforeProduceResp,
	FollowerBeforeAppend, FollowerAfterAppend, BeforeFsync,
	HWAdvance, HWCheckpointWrite, BeforeTruncate, AfterTruncate,
	ISRChange, BecomeLeader, BecomeFollower,
	ProducerStateUpdate, BeforeProducerSnapshot, AfterProducerSnapshot,
	ShutdownBeforeFlush, ShutdownBeforeMarker,
}

// PackagePath is the import path that prefixes the failpoints: that of
// impl/broker, whose markers fire them.
const PackagePath = "github.com/watermarkhq/watermark/impl/broker"

// Path is the full failpoint name for name.
func Path(name string) string { return PackagePath + "/" + name }
