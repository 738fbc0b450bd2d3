package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/linearizability"
)

// ShardFileName is the file a shard of a check leaves in its report folder,
// for `watermark merge`.
const ShardFileName = "shard.json"

// ShardFile is one shard's result: which shard of how many, on what, the
// whole check's case order, its report, and where its failed runs' folders
// are, relative to the shard's report folder (so that the folder can move:
// a CI artifact downloaded elsewhere).
type ShardFile struct {
	Shard  int `json:"shard"`
	Of     int `json:"of"`
	Target string
	// Args are the check's flags but --shard, --report-dir and --junit:
	// shards of one check share them.
	Args   []string
	Cases  []string
	Report *judge.Report
	Dirs   map[string]string
}

func runKey(r *judge.RunResult) string { return fmt.Sprintf("%s seed %d", r.Case, r.Seed) }

// WriteShard writes dir/shard.json. The failed runs go without their
// history (their folders hold it).
func WriteShard(dir string, sf ShardFile, written map[*judge.RunResult]string) (string, error) {
	rep := *sf.Report
	rep.Cases = nil
	sf.Dirs = map[string]string{}
	for _, cr := range sf.Report.Cases {
		c := *cr
		c.Failed = nil
		for _, r := range cr.Failed {
			lean := *r
			lean.Run = nil
			lean.Linearizability = linearizability.LinearizabilityResult{Verdict: r.Linearizability.Verdict}
			c.Failed = append(c.Failed, &lean)
			if d := written[r]; d != "" {
				if rel, err := filepath.Rel(dir, d); err == nil && !strings.HasPrefix(rel, "..") {
					sf.Dirs[runKey(r)] = filepath.ToSlash(rel)
				}
			}
		}
		rep.Cases = append(rep.Cases, &c)
	}
	sf.Report = &rep
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("shard: %w", err)
	}
	b, err := json.MarshalIndent(sf, "", "  ")
	if err != nil {
		return "", fmt.Errorf("shard: %w", err)
	}
	path := filepath.Join(dir, ShardFileName)
	return path, os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadShard reads a shard's file, from its report folder or the file's
// own path, and the folders of its failed runs where they are now.
func ReadShard(path string) (*ShardFile, map[*judge.RunResult]string, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, ShardFileName)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (give each shard's report folder, with its %s)", err, ShardFileName)
	}
	var sf ShardFile
	if err := json.Unmarshal(b, &sf); err != nil {
		return nil, nil, fmt.Errorf("%s: not a shard's result: %v", path, err)
	}
	if sf.Report == nil || sf.Of < 1 || sf.Shard < 1 || sf.Shard > sf.Of {
		return nil, nil, fmt.Errorf("%s: not a shard's result (no report, or shard %d of %d)", path, sf.Shard, sf.Of)
	}
	written := map[*judge.RunResult]string{}
	for _, cr := range sf.Report.Cases {
		for _, r := range cr.Failed {
			if rel, ok := sf.Dirs[runKey(r)]; ok {
				written[r] = filepath.Join(filepath.Dir(path), filepath.FromSlash(rel))
			}
		}
	}
	return &sf, written, nil
}

// MergeShards checks that files are the shards 1..N of one check, each
// once, and joins them: the whole check's report, and every failed run's
// folder.
func MergeShards(files []*ShardFile, written []map[*judge.RunResult]string) (*judge.Report, map[*judge.RunResult]string, error) {
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("no shards to merge")
	}
	first := files[0]
	seen := map[int]bool{}
	var reps []*judge.Report
	all := map[*judge.RunResult]string{}
	for i, f := range files {
		switch {
		case f.Of != first.Of:
			return nil, nil, fmt.Errorf("shard %d is of %d shards, shard %d of %d: not one check's shards", f.Shard, f.Of, first.Shard, first.Of)
		case f.Target != first.Target || !slices.Equal(f.Args, first.Args) || !slices.Equal(f.Cases, first.Cases):
			return nil, nil, fmt.Errorf("shards %d and %d ran different checks (target %s %v, target %s %v)", first.Shard, f.Shard, first.Target, first.Args, f.Target, f.Args)
		case seen[f.Shard]:
			return nil, nil, fmt.Errorf("shard %d/%d given twice", f.Shard, f.Of)
		}
		seen[f.Shard] = true
		reps = append(reps, f.Report)
		for r, d := range written[i] {
			all[r] = d
		}
	}
	var missing []string
	for i := 1; i <= first.Of; i++ {
		if !seen[i] {
			missing = append(missing, fmt.Sprintf("%d/%d", i, first.Of))
		}
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("shard %s missing: merge needs every shard's folder (a shard that failed to run must be run again)", strings.Join(missing, ", "))
	}
	return judge.MergeReports(first.Cases, reps), all, nil
}
