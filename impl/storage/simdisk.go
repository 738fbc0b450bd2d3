package storage

import (
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
)

// SimDisk is an in-memory Disk for the simulator that models the page cache
// precisely enough to lose exactly what a real power loss can lose.
//
// Each file has a current content (what the page cache holds, what ReadFile
// returns) and a durable content (what the platter holds). Append and Truncate
// change only the current content; Sync copies current to durable;
// WriteFileAtomic sets both; Remove is immediate and durable.
//
// Crash models a process crash: the page cache survives, nothing is lost.
// PowerLoss models losing the machine; see its comment for the exact model.
//
// The zero value is an empty disk ready to use. Behaviour depends only on the
// operations and the *rand.Rand passed to PowerLoss, so a seeded run replays
// byte for byte. It is safe for concurrent use, though the simulator needs none.
type SimDisk struct {
	mu          sync.Mutex
	files       map[string]*simFile
	crashes     int
	powerLosses int
}

// simFile is one file of a SimDisk. Storing the durable content as a length
// into the current one (plus what truncation cut off) keeps Sync O(1) instead
// of copying the whole log on every fsync.
//
// Invariants:
//  1. 0 <= stable <= len(data).
//  2. If durable, the durable content is data[:stable] followed by cut.
//  3. If !durable, the file has no durable content: it was created by Append
//     and never synced; cut is empty and stable is 0.
type simFile struct {
	data    []byte // current contents
	stable  int    // data[:stable] is unchanged since the last sync
	cut     []byte // durable bytes removed from the current contents by Truncate since the last sync
	durable bool   // the file has been synced or written atomically at least once
}

var _ Disk = (*SimDisk)(nil)

// NewSimDisk returns an empty SimDisk.
func NewSimDisk() *SimDisk { return &SimDisk{} }

func notExist(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
}

// file returns name's file or a not-exist error; call with mu held.
func (d *SimDisk) file(op, name string) (*simFile, error) {
	if err := checkName(op, name); err != nil {
		return nil, err
	}
	f, ok := d.files[name]
	if !ok {
		return nil, notExist(op, name)
	}
	return f, nil
}

// ReadFile implements Disk. It returns a copy, so callers may keep or modify it.
func (d *SimDisk) ReadFile(name string) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, err := d.file("read", name)
	if err != nil {
		return nil, err
	}
	return append([]byte{}, f.data...), nil
}

// ReadAt implements Disk.
func (d *SimDisk) ReadAt(name string, p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, err := d.file("read", name)
	if err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("negative offset %d", off)}
	}
	if off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// FileSize implements Disk.
func (d *SimDisk) FileSize(name string) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, err := d.file("stat", name)
	if err != nil {
		return 0, err
	}
	return int64(len(f.data)), nil
}

// Append implements Disk.
func (d *SimDisk) Append(name string, data []byte) error {
	if err := checkName("append", name); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.files[name]
	if !ok {
		if d.files == nil {
			d.files = map[string]*simFile{}
		}
		f = &simFile{}
		d.files[name] = f
	}
	f.data = append(f.data, data...)
	return nil
}

// Truncate implements Disk.
func (d *SimDisk) Truncate(name string, size int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, err := d.file("truncate", name)
	if err != nil {
		return err
	}
	if size < 0 || size > int64(len(f.data)) {
		return &fs.PathError{Op: "truncate", Path: name, Err: fmt.Errorf("size %d outside [0, %d]", size, len(f.data))}
	}
	n := int(size)
	if n < f.stable {
		// Later appends reuse data's backing array, so the cut bytes are copied.
		cut := make([]byte, 0, f.stable-n+len(f.cut))
		cut = append(cut, f.data[n:f.stable]...)
		f.cut = append(cut, f.cut...)
		f.stable = n
	}
	f.data = f.data[:n]
	return nil
}

// Sync implements Disk.
func (d *SimDisk) Sync(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, err := d.file("sync", name)
	if err != nil {
		return err
	}
	f.stable, f.cut, f.durable = len(f.data), nil, true
	return nil
}

// WriteFileAtomic implements Disk.
func (d *SimDisk) WriteFileAtomic(name string, data []byte) error {
	if err := checkName("write", name); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.files == nil {
		d.files = map[string]*simFile{}
	}
	d.files[name] = &simFile{data: append([]byte{}, data...), stable: len(data), durable: true}
	return nil
}

// Remove implements Disk.
func (d *SimDisk) Remove(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.file("remove", name); err != nil {
		return err
	}
	delete(d.files, name)
	return nil
}

// List implements Disk.
func (d *SimDisk) List(prefix string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var names []string
	for name := range d.files {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// Stable reports how many bytes at the start of name are on the platter
// and unchanged since its last sync: what any power loss keeps of it (0
// for a file never synced, or one that does not exist).
func (d *SimDisk) Stable(name string) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f, ok := d.files[name]; ok && f.durable {
		return int64(f.stable)
	}
	return 0
}

// Size reports the current size of name (-1 if it does not exist).
func (d *SimDisk) Size(name string) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f, ok := d.files[name]; ok {
		return int64(len(f.data))
	}
	return -1
}

// Crash records a process crash. The page cache belongs to the kernel and
// survives the process, so nothing is lost: unsynced writes stay readable and
// become durable at the next Sync, as they would on a real machine.
func (d *SimDisk) Crash() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.crashes++
}

// PowerLoss drops what the page cache held and the platter did not. For each
// file, in name order (so that rng draws replay):
//
//  1. A file that was never synced nor written atomically survives or
//     vanishes on a fair coin from rng: its directory entry was never made
//     durable, but a journaling file system may have written it back
//     anyway. If it survives, rule 2 applies to all of it (it may come
//     back empty). A log's newest segment can so outlive the unsynced end
//     of the one before it.
//  2. Otherwise the bytes appended since the last sync survive as a prefix of
//     k bytes, k drawn uniformly from [0, appended bytes]. The page cache
//     writes back in order, so a run of unsynced appends loses a suffix: some
//     appends survive whole, the next one may be torn, the rest are gone.
//  3. If since the last sync a Truncate cut into durable bytes, a fair coin
//     from rng first decides whether the truncation reached the disk. If it
//     did not, the file reverts to its durable content exactly (the cut bytes
//     return, later appends are gone); if it did, rule 2 applies to the
//     truncated content.
//
// Afterwards every surviving file is fully durable (current equals durable).
func (d *SimDisk) PowerLoss(rng *rand.Rand) {
	d.powerLoss(func(*simFile) bool { return rng.IntN(2) == 0 }, func(f *simFile) {
		if len(f.cut) > 0 && rng.IntN(2) == 0 {
			f.data = append(f.data[:f.stable], f.cut...)
		} else if appended := len(f.data) - f.stable; appended > 0 {
			f.data = f.data[:f.stable+rng.IntN(appended+1)]
		}
	})
}

// powerLoss drops the files that were never durable unless keep says
// otherwise and lets settle decide what each file kept keeps of its
// unsynced writes; what it keeps is then durable.
func (d *SimDisk) powerLoss(keep func(f *simFile) bool, settle func(f *simFile)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.powerLosses++
	for _, name := range sortedKeys(d.files) {
		f := d.files[name]
		if !f.durable && !keep(f) {
			delete(d.files, name)
			continue
		}
		settle(f)
		f.stable, f.cut, f.durable = len(f.data), nil, true
	}
}

// PowerLossWorst is a power loss in which nothing written since the last
// sync reached the disk: every file reverts to exactly its durable content
// (unsynced appends gone, unsynced truncations undone, unsynced files
// gone). A scenario that needs one exact outcome uses it; PowerLoss draws
// one of the outcomes a real disk allows.
func (d *SimDisk) PowerLossWorst() {
	d.powerLoss(func(*simFile) bool { return false }, func(f *simFile) { f.data = append(f.data[:f.stable], f.cut...) })
}

// Crashes returns how many times Crash was called.
func (d *SimDisk) Crashes() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.crashes
}

// PowerLosses returns how many times PowerLoss was called.
func (d *SimDisk) PowerLosses() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.powerLosses
}

// UnsyncedBytes returns how many bytes at the end of name's current content a
// power loss may drop: those appended since the last sync, or all of them if
// the file was never synced. It is 0 for a missing file.
func (d *SimDisk) UnsyncedBytes(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.files[name]
	if !ok {
		return 0
	}
	return len(f.data) - f.stable
}

// Durable returns a copy of name's durable content, what the file would hold
// after a power loss that kept none of the unsynced writes; ok is false when
// the file has no durable content.
func (d *SimDisk) Durable(name string) (content []byte, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, exists := d.files[name]
	if !exists || !f.durable {
		return nil, false
	}
	content = make([]byte, 0, f.stable+len(f.cut))
	content = append(content, f.data[:f.stable]...)
	return append(content, f.cut...), true
}

// Clone returns an independent deep copy of the disk, including its unsynced
// state and counters, so a simulation can fork a run.
func (d *SimDisk) Clone() *SimDisk {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := &SimDisk{crashes: d.crashes, powerLosses: d.powerLosses}
	if len(d.files) > 0 {
		c.files = make(map[string]*simFile, len(d.files))
	}
	for name, f := range d.files {
		c.files[name] = &simFile{
			data:    append([]byte{}, f.data...),
			stable:  f.stable,
			cut:     append([]byte(nil), f.cut...),
			durable: f.durable,
		}
	}
	return c
}

// Damage flips n bytes of name from offset at, in its current and its
// durable contents alike: a bad sector, or a stray write, under bytes
// that were already synced. It reports how many it flipped (fewer when
// the file ends first; 0 for a missing file). Only the simulator's fault
// injection calls it.
func (d *SimDisk) Damage(name string, at int64, n int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.files[name]
	if !ok || at < 0 || at >= int64(len(f.data)) {
		return 0
	}
	end := min(int(at)+n, len(f.data))
	for i := int(at); i < end; i++ {
		f.data[i] ^= 0xff
	}
	return end - int(at)
}
