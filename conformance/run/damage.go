package run

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/watermarkhq/watermark/impl/record"
)

// DamageAt says where in the synced part of a log segment a damage-log
// fault flips its bytes: damage is damage wherever it sits, and a broker
// must find it and report the data it cost as well in the first batch
// as in the last, which looks like a torn write.
type DamageAt string

// The places a damage-log fault strikes.
const (
	DamageMiddle DamageAt = ""      // the middle of the synced bytes (the default)
	DamageFirst  DamageAt = "first" // inside the segment's first batch
	DamageLast   DamageAt = "last"  // inside its last whole batch: what a torn write would leave
	DamageAny    DamageAt = "any"   // any byte of the synced part, drawn from the seed
)

var damageAts = []DamageAt{DamageMiddle, DamageFirst, DamageLast, DamageAny}

// Values lists the names a DamageAt takes.
func (DamageAt) Values() []string { return []string{"middle", "first", "last", "any"} }

// UnmarshalText reads one of Values ("middle" is the default, "").
func (d *DamageAt) UnmarshalText(b []byte) error {
	v := DamageAt(b)
	if v == "middle" {
		v = DamageMiddle
	}
	if !slices.Contains(damageAts, v) {
		return fmt.Errorf("unknown damage_at %q: want one of %s", b, strings.Join(DamageAt("").Values(), ", "))
	}
	*d = v
	return nil
}

// MarshalText writes the place's name.
func (d DamageAt) MarshalText() ([]byte, error) {
	if d == DamageMiddle {
		return []byte("middle"), nil
	}
	return []byte(d), nil
}

// String names the place as run files do.
func (d DamageAt) String() string {
	b, _ := d.MarshalText()
	return string(b)
}

func (d DamageAt) validate() error {
	if !slices.Contains(damageAts, d) {
		return fmt.Errorf("unknown damage_at %q: want one of %s", string(d), strings.Join(DamageAt("").Values(), ", "))
	}
	return nil
}

// DamagePoint is the byte of data (the synced bytes of a segment file,
// Kafka v2 batches end to end) where a damage-log fault striking at d
// flips its bytes; false when data is too short to damage (under 64
// bytes). A batch is struck past its length field, in the middle of the
// rest, so its framing still reads and its CRC does not.
func DamagePoint(data []byte, d DamageAt, rng *rand.Rand) (int64, bool) {
	size := int64(len(data))
	if size < 64 {
		return 0, false
	}
	switch d {
	case DamageAny:
		return rng.Int64N(size), true
	case DamageFirst, DamageLast:
		spans := batchSpans(data)
		if len(spans) == 0 {
			return size / 2, true
		}
		sp := spans[0]
		if d == DamageLast {
			sp = spans[len(spans)-1]
		}
		const header = 12 // base offset and length: the framing
		return sp[0] + header + (sp[1]-sp[0]-header)/2, true
	}
	return size/4 + rng.Int64N(size/2), true
}

// batchSpans are the start and end of each whole batch at the head of
// data.
func batchSpans(data []byte) [][2]int64 {
	var spans [][2]int64
	for at := int64(0); at < int64(len(data)); {
		n, err := record.WireLen(data[at:])
		if err != nil || n <= 12 || at+int64(n) > int64(len(data)) {
			break
		}
		spans = append(spans, [2]int64{at, at + int64(n)})
		at += int64(n)
	}
	return spans
}

// TornLike reports whether damage at byte at of data, a log's newest
// segment as it stands on disk, cannot be told from a torn write by the
// recovery after a crash (spec/SEMANTICS.md, Durability, "Lost data"), and
// the base offset of the batch it struck: it lies in the last whole batch,
// so the cut leaves no intact batch after it, and that batch starts at or
// above hw, the replica's checkpointed HW (found: a checkpoint exists;
// with none, the cut counts as loss). Such damage on a partition's only
// ISR member costs the committed records from base on, if any, and no
// broker can know it lost them: that member learnt a lower HW than its
// leader had, and Kafka 4.1 too truncates the batch and may lead with the
// rest.
func TornLike(data []byte, at, hw int64, found bool) (base int64, ok bool) {
	if !found {
		return 0, false
	}
	spans := batchSpans(data)
	if len(spans) == 0 {
		return 0, false
	}
	sp := spans[len(spans)-1]
	if at < sp[0] || at >= sp[1] {
		// An intact batch follows the damaged one, or the damage is in
		// a partial batch at the end: never committed, nothing to lose.
		return 0, false
	}
	base = int64(binary.BigEndian.Uint64(data[sp[0]:]))
	return base, base >= hw
}
