package node

import (
	"errors"
	"io/fs"
	"sync"

	"github.com/watermarkhq/watermark/impl/storage"
)

// trackingDisk is a FileDisk that remembers how much of each file was
// synced, so that a power-loss failpoint in a real process can drop what a
// real power cut would: every byte written since the file's last sync. A
// process cannot cut its own machine's power; throwing away the unsynced
// suffixes and then dying is the same outcome as the worst-case cut, the
// one SimDisk's PowerLossWorst models.
type trackingDisk struct {
	*storage.FileDisk
	mu     sync.Mutex
	synced map[string]int64 // durable size of each file written through this disk
	size   map[string]int64 // current size
}

func newTrackingDisk(root string) (*trackingDisk, error) {
	d, err := storage.NewFileDisk(root)
	if err != nil {
		return nil, err
	}
	return &trackingDisk{FileDisk: d, synced: map[string]int64{}, size: map[string]int64{}}, nil
}

// known makes sure name's sizes are tracked; a file found on disk at start
// is durable as it is.
func (d *trackingDisk) known(name string) {
	if _, ok := d.size[name]; ok {
		return
	}
	data, err := d.FileDisk.ReadFile(name)
	n := int64(len(data))
	if errors.Is(err, fs.ErrNotExist) {
		n = 0
	}
	d.size[name] = n
	d.synced[name] = n
}

func (d *trackingDisk) Append(name string, data []byte) error {
	d.mu.Lock()
	d.known(name)
	d.mu.Unlock()
	if err := d.FileDisk.Append(name, data); err != nil {
		return err
	}
	d.mu.Lock()
	d.size[name] += int64(len(data))
	d.mu.Unlock()
	return nil
}

func (d *trackingDisk) Truncate(name string, size int64) error {
	d.mu.Lock()
	d.known(name)
	d.mu.Unlock()
	if err := d.FileDisk.Truncate(name, size); err != nil {
		return err
	}
	d.mu.Lock()
	d.size[name] = size
	// The shrink itself is not durable either; what survives a cut is at
	// most the synced prefix, which the shrink may have cut into.
	d.synced[name] = min(d.synced[name], size)
	d.mu.Unlock()
	return nil
}

func (d *trackingDisk) Sync(name string) error {
	if err := d.FileDisk.Sync(name); err != nil {
		return err
	}
	d.mu.Lock()
	d.known(name)
	d.synced[name] = d.size[name]
	d.mu.Unlock()
	return nil
}

func (d *trackingDisk) WriteFileAtomic(name string, data []byte) error {
	if err := d.FileDisk.WriteFileAtomic(name, data); err != nil {
		return err
	}
	d.mu.Lock()
	d.size[name] = int64(len(data))
	d.synced[name] = int64(len(data))
	d.mu.Unlock()
	return nil
}

func (d *trackingDisk) Remove(name string) error {
	if err := d.FileDisk.Remove(name); err != nil {
		return err
	}
	d.mu.Lock()
	delete(d.size, name)
	delete(d.synced, name)
	d.mu.Unlock()
	return nil
}

// dropUnsynced cuts every file back to its synced size: the power cut.
func (d *trackingDisk) dropUnsynced() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for name, n := range d.size {
		if s := d.synced[name]; s < n {
			errs = append(errs, d.FileDisk.Truncate(name, s))
			d.size[name] = s
		}
	}
	return errors.Join(errs...)
}
