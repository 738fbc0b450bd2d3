package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/layout"
)

// ReplaceDisk kills broker id and empties its data directory, as a
// machine that comes back with a new drive: Restart starts it on nothing.
func (c *Cluster) ReplaceDisk(id int) error {
	if err := c.Kill(id); err != nil {
		return err
	}
	dir := filepath.Join(c.dir, fmt.Sprintf("broker-%d", id))
	c.opts.Logf("replace the disk of broker %d (%s emptied)", id, dir)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("replace the disk of broker %d: %w", id, err)
	}
	return os.MkdirAll(dir, 0o755)
}

// DamageLog stops broker id (SIGKILL, or with clean SIGTERM and its
// clean shutdown) and flips n bytes of its log of each partition in tps,
// in the oldest segment, at the byte pick chooses in what the file holds
// (nil: the middle), as a bad sector would. After SIGKILL the page cache
// holds what it wrote; after a clean stop every byte was synced. It says,
// per log, which bytes it flipped; a log pick finds too short is left
// alone.
func (c *Cluster) DamageLog(id int, tps []kafka.TopicPartition, n int, pick func(data []byte) (int64, bool), clean bool) ([]string, error) {
	stop := c.Kill
	if clean {
		stop = func(id int) error { return c.Terminate(id, 0) }
	}
	if err := stop(id); err != nil {
		return nil, err
	}
	if pick == nil {
		pick = func(data []byte) (int64, bool) { return int64(len(data) / 2), len(data) >= 64 }
	}
	var what []string
	for _, tp := range tps {
		root := filepath.Join(c.dir, fmt.Sprintf("broker-%d", id))
		dir := path.Dir(layout.LogFile(tp))
		var names []string
		if entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir))); err == nil {
			for _, e := range entries {
				names = append(names, dir+"/"+e.Name())
			}
		}
		name := filepath.Join(root, filepath.FromSlash(layout.FirstSegment(tp, names)))
		w, err := flip(name, n, pick)
		if err != nil {
			return what, fmt.Errorf("damage the log of %s on broker %d: %w", tp, id, err)
		}
		if w != "" {
			c.opts.Logf("damage broker %d's log of %s: %s", id, tp, w)
			what = append(what, tp.String()+": "+w)
		}
	}
	return what, nil
}

// flip inverts n bytes of file name from the byte pick chooses; "" when
// the file is missing or pick finds it too short to damage.
func flip(name string, n int, pick func(data []byte) (int64, bool)) (string, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	at, ok := pick(data)
	if !ok || at < 0 || at >= int64(len(data)) {
		return "", nil
	}
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	buf := data[at:min(at+int64(n), int64(len(data)))]
	for i := range buf {
		buf[i] ^= 0xff
	}
	if _, err := f.WriteAt(buf, at); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d bytes flipped at byte %d of %d (%s)", len(buf), at, len(data), name), f.Sync()
}
