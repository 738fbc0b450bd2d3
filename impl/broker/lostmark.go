package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// lostMarker is a file in a partition's directory that exists while the
// replica's loss of committed records stands: written by the start that
// finds the loss (lostData), removed once a leader has added the replica
// back to the ISR or the controller elected it knowing the loss (an
// unclean election or recovery), as the controller clears its own record
// of the loss then. A start that finds the marker reports the loss again,
// whatever its log looks like: a process that found the loss and stopped
// before the controller heard of it, cleanly even, leaves a log that no
// longer shows it (its clean stop checkpoints an HW clamped to the
// shortened log), and its successor would pass for a whole replica.
const lostMarker = "lost-data"

// markLost records tp's loss in its directory, durably, unless the marker
// is there already.
func (b *Broker) markLost(dir, why string) error {
	name := path.Join(dir, lostMarker)
	if ok, err := b.hasLostMarker(dir); err != nil || ok {
		return err
	}
	if err := b.disk.WriteFileAtomic(name, []byte(why+"\n")); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// hasLostMarker reports whether dir holds lostMarker.
func (b *Broker) hasLostMarker(dir string) (bool, error) {
	name := path.Join(dir, lostMarker)
	_, err := b.disk.FileSize(name)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("read %s: %w", name, err)
}

// settleLoss clears h's loss once state s shows it made good: the replica
// is back in the ISR after a state of this process that left it out, or
// leads (only an election that accepts the loss elects it). It removes the
// marker and stops naming the partition in registrations.
func (b *Broker) settleLoss(h *hosted, s kafka.PartitionState) error {
	if !h.lost {
		return nil
	}
	me := int32(b.cfg.ID)
	if !slices.Contains(s.ISR, me) {
		h.outOfISR = true
		return nil
	}
	if !h.outOfISR && s.Leader != me {
		return nil // still the kept ISR member that lost the data
	}
	if err := b.disk.Remove(path.Join(h.dir, lostMarker)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return b.storageFailure(h.tp, err)
	}
	h.lost = false
	b.lostData = slices.DeleteFunc(b.lostData, func(tp kafka.TopicPartition) bool { return tp == h.tp })
	return nil
}
