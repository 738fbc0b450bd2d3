package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
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

// DamageLog kills broker id and flips n bytes in the middle of its log of
// each partition in tps (the files a broker synced; after SIGKILL the page
// cache holds what it wrote), as a bad sector would. It says, per log,
// which bytes it flipped; a log under 64 bytes is left alone.
func (c *Cluster) DamageLog(id int, tps []kafka.TopicPartition, n int) ([]string, error) {
	if err := c.Kill(id); err != nil {
		return nil, err
	}
	var what []string
	for _, tp := range tps {
		root := filepath.Join(c.dir, fmt.Sprintf("broker-%d", id))
		dir := path.Dir(broker.LogFile(tp))
		var names []string
		if entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir))); err == nil {
			for _, e := range entries {
				names = append(names, dir+"/"+e.Name())
			}
		}
		name := filepath.Join(root, filepath.FromSlash(broker.FirstSegment(tp, names)))
		w, err := flipMiddle(name, n)
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

// flipMiddle inverts n bytes in the middle of file name; "" when the file
// is missing or too short to damage.
func flipMiddle(name string, n int) (string, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	size := st.Size()
	if size < 64 {
		return "", nil
	}
	at := size / 2
	buf := make([]byte, min(int64(n), size-at))
	if _, err := f.ReadAt(buf, at); err != nil {
		return "", err
	}
	for i := range buf {
		buf[i] ^= 0xff
	}
	if _, err := f.WriteAt(buf, at); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d bytes flipped at byte %d of %d (%s)", len(buf), at, size, name), f.Sync()
}
