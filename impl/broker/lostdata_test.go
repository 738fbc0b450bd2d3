package broker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/watermarkhq/watermark/impl/storage"
)

// Each rule that calls a recovered log lost data, and the recoveries none
// of them calls so: a clean stop makes any cut damage; after a crash, a
// log below its HW checkpoint, intact batches dropped after damage, or a
// cut that no checkpoint can vouch for. A torn tail after a crash, above
// the checkpoint, is what a crash leaves and loses nothing reported.
// Reference: spec/SEMANTICS.md, Clean and unclean restarts (lost data).
func TestLostDataRules(t *testing.T) {
	whole := storage.Recovery{File: "t-0", LEO: 10}
	torn := storage.Recovery{File: "t-0", LEO: 10, DroppedBytes: 40, Reason: "a torn batch"}
	damagedMid := storage.Recovery{File: "t-0", LEO: 4, DroppedBytes: 400, DroppedBatches: 3, Reason: "CRC mismatch"}
	for _, tc := range []struct {
		name    string
		rec     storage.Recovery
		hw      int64
		hwFound bool
		clean   bool
		lost    bool
	}{
		{"whole log, crash", whole, 10, true, false, false},
		{"whole log, clean stop", whole, 10, true, true, false},
		{"whole log, no checkpoint", whole, 0, false, false, false},
		{"torn tail above the checkpoint, crash", torn, 8, true, false, false},
		{"torn tail at the checkpoint, crash", torn, 10, true, false, false},
		{"cut after a clean stop", torn, 8, true, true, true},
		{"cut below the checkpoint", torn, 12, true, false, true},
		{"intact batches dropped after damage", damagedMid, 0, true, false, true},
		{"cut with no checkpoint", torn, 0, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := lostData(tc.rec, tc.hw, tc.hwFound, tc.clean)
			assert.Equal(t, tc.lost, why != "", "lostData = %q", why)
		})
	}
}
