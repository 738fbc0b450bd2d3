// Package storage keeps a partition replica's durable state: the log of record
// batches, the high-watermark checkpoint and the leader-epoch cache.
//
// All I/O goes through the Disk interface, so the same code runs on real files
// (FileDisk) and inside the deterministic simulator (SimDisk), whose power loss
// drops unsynced writes the way a real page cache would.
package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Disk is a namespace of files named by slash-separated relative paths
// (fs.ValidPath: no leading slash, no "." or ".." elements).
//
// Writes through Append and Truncate are like writes to the page cache: they
// are visible to ReadFile at once but survive a power loss only after Sync.
// WriteFileAtomic and Remove are durable when they return. Errors for missing
// files wrap fs.ErrNotExist.
type Disk interface {
	// ReadFile returns the file's current contents in a new slice that
	// the caller owns: Log keeps the batches it decodes from it.
	ReadFile(name string) ([]byte, error)
	// ReadAt reads len(p) bytes from the file at offset off, as
	// io.ReaderAt does: fewer only at the end of the file, with io.EOF.
	ReadAt(name string, p []byte, off int64) (int, error)
	// FileSize returns the file's current size.
	FileSize(name string) (int64, error)
	// Append adds data at the end of the file, creating it if missing. It
	// does not retain data.
	Append(name string, data []byte) error
	// Truncate shrinks the file to size bytes; size may not exceed the file's size.
	Truncate(name string, size int64) error
	// Sync makes the file's current contents (and its existence) durable.
	Sync(name string) error
	// WriteFileAtomic replaces the whole file durably: after a crash or power
	// loss the file holds either the old or the new contents, never a mix.
	WriteFileAtomic(name string, data []byte) error
	// Remove deletes the file.
	Remove(name string) error
	// List returns the sorted names of the files whose name starts with prefix.
	List(prefix string) ([]string, error)
}

// errInvalidName rejects names that could escape the namespace or that mean
// different files on different implementations.
var errInvalidName = errors.New("invalid file name")

func checkName(op, name string) error {
	if !fs.ValidPath(name) || name == "." {
		return &fs.PathError{Op: op, Path: name, Err: errInvalidName}
	}
	return nil
}

// tmpSuffix marks WriteFileAtomic's temporary files; List hides them because a
// crash between create and rename can leave one behind.
const tmpSuffix = ".tmp"

// FileDisk is a Disk rooted at a directory of the real filesystem. It is safe
// for concurrent use on distinct names.
type FileDisk struct {
	root string

	mu sync.Mutex
	// open keeps one append handle per file so that appends do not pay an
	// open and close each.
	open map[string]*os.File
	// newDirs holds names whose directory entries (or parent directories) were
	// created since the last Sync of that name and so are not yet durable.
	newDirs map[string]bool
}

var _ Disk = (*FileDisk)(nil)

// NewFileDisk returns a FileDisk rooted at root, creating the directory.
func NewFileDisk(root string) (*FileDisk, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("create disk root: %w", err)
	}
	return &FileDisk{root: root, open: map[string]*os.File{}, newDirs: map[string]bool{}}, nil
}

// Root returns the directory the disk is rooted at.
func (d *FileDisk) Root() string { return d.root }

func (d *FileDisk) path(name string) string {
	return filepath.Join(d.root, filepath.FromSlash(name))
}

// ReadFile implements Disk.
func (d *FileDisk) ReadFile(name string) ([]byte, error) {
	if err := checkName("read", name); err != nil {
		return nil, err
	}
	return os.ReadFile(d.path(name))
}

// ReadAt implements Disk, through the file's cached handle (pread).
func (d *FileDisk) ReadAt(name string, p []byte, off int64) (int, error) {
	if err := checkName("read", name); err != nil {
		return 0, err
	}
	f, err := d.handle(name, false)
	if err != nil {
		return 0, err
	}
	return f.ReadAt(p, off)
}

// FileSize implements Disk.
func (d *FileDisk) FileSize(name string) (int64, error) {
	if err := checkName("stat", name); err != nil {
		return 0, err
	}
	st, err := os.Stat(d.path(name))
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// handle returns the cached append handle of name, opening it (and creating
// the file and its directories when create is set) if needed.
func (d *FileDisk) handle(name string, create bool) (*os.File, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f, ok := d.open[name]; ok {
		return f, nil
	}
	p := d.path(name)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err = os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if f, err = os.OpenFile(p, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			d.newDirs[name] = true
		}
	}
	if err != nil {
		return nil, err
	}
	d.open[name] = f
	return f, nil
}

// forget closes and drops name's cached handle, because the name is about to
// point to another inode (rename) or to none (remove).
func (d *FileDisk) forget(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f, ok := d.open[name]; ok {
		_ = f.Close()
		delete(d.open, name)
	}
}

// Append implements Disk.
func (d *FileDisk) Append(name string, data []byte) error {
	if err := checkName("append", name); err != nil {
		return err
	}
	f, err := d.handle(name, true)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return err
}

// Truncate implements Disk.
func (d *FileDisk) Truncate(name string, size int64) error {
	if err := checkName("truncate", name); err != nil {
		return err
	}
	f, err := d.handle(name, false)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if size < 0 || size > st.Size() {
		return &fs.PathError{Op: "truncate", Path: name, Err: fmt.Errorf("size %d outside [0, %d]", size, st.Size())}
	}
	return f.Truncate(size)
}

// Sync implements Disk. The first Sync after Append created the file also
// syncs the directories up to the root, so that the file's name survives too.
func (d *FileDisk) Sync(name string) error {
	if err := checkName("sync", name); err != nil {
		return err
	}
	f, err := d.handle(name, false)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	d.mu.Lock()
	fresh := d.newDirs[name]
	d.mu.Unlock()
	if !fresh {
		return nil
	}
	if err := d.syncDirs(name); err != nil {
		return err
	}
	d.mu.Lock()
	delete(d.newDirs, name)
	d.mu.Unlock()
	return nil
}

// syncDirs fsyncs every directory from name's parent up to the root, since any
// of them may have been created by MkdirAll.
func (d *FileDisk) syncDirs(name string) error {
	for dir := path.Dir(name); ; dir = path.Dir(dir) {
		if err := syncDir(d.path(dir)); err != nil {
			return err
		}
		if dir == "." {
			return nil
		}
	}
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteFileAtomic implements Disk: write a temporary file, fsync it, rename it
// over name, fsync the directories.
func (d *FileDisk) WriteFileAtomic(name string, data []byte) error {
	if err := checkName("write", name); err != nil {
		return err
	}
	p := d.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), filepath.Base(p)+".*"+tmpSuffix)
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		d.forget(name)
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return d.syncDirs(name)
}

// Remove implements Disk.
func (d *FileDisk) Remove(name string) error {
	if err := checkName("remove", name); err != nil {
		return err
	}
	d.forget(name)
	if err := os.Remove(d.path(name)); err != nil {
		return err
	}
	d.mu.Lock()
	delete(d.newDirs, name)
	d.mu.Unlock()
	return syncDir(filepath.Dir(d.path(name)))
}

// List implements Disk. It walks only the directory named by prefix's part up
// to its last slash.
func (d *FileDisk) List(prefix string) ([]string, error) {
	base := ""
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		base = prefix[:i]
		if err := checkName("list", base); err != nil {
			return nil, err // "../" would walk outside the root
		}
	}
	var names []string
	err := filepath.WalkDir(d.path(base), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !e.Type().IsRegular() || strings.HasSuffix(p, tmpSuffix) {
			return nil
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		if name := filepath.ToSlash(rel); strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

// Close closes the cached file handles. Unsynced data stays in the page cache;
// closing does not make it durable.
func (d *FileDisk) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var first error
	for _, name := range sortedKeys(d.open) {
		if err := d.open[name].Close(); err != nil && first == nil {
			first = err
		}
		delete(d.open, name)
	}
	return first
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
