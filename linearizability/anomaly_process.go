package linearizability

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// checkProcessing judges what consumers' applications processed (process
// ops), per group and partition, against what the group committed:
//
//   - reprocessed: one record (one value at one offset) processed by two or
//     more process ops of the group, by one member or several. Offset is
//     the record's. Ops: the process ops, in ID order.
//   - unprocessed: a record at an offset below the group's highest accepted
//     commit (an ok commit; committed offset = the next offset to read)
//     that no process op of the group names. The record's value comes from
//     the ok fetches (any client's); an offset no fetch returned cannot be
//     judged and is skipped, and so is one below a log start offset a
//     fetch reported (retention may delete a record before the group
//     reads it, as it may delete one nobody read: unseen's rule). Offset
//     is the record's. Ops: the commit, the fetch that returned the
//     record.
//
// Process ops without a Group are not judged, nor is a group whose
// application recorded no processing at all (a history that does not
// record processing says nothing about it). A group that committed nothing
// has nothing below its committed offset. Time plays no part: the
// judgement is about the whole run. It runs in O(n log n).
func checkProcessing(h []Op) []Anomaly {
	type gtp struct {
		group string
		tp    kafka.TopicPartition
	}
	type rec struct {
		offset int64
		value  string
	}
	processed := map[gtp]map[rec][]int{}
	committed := map[gtp]int{} // the ok commit with the highest offset
	for i := range h {
		op := &h[i]
		switch {
		case op.Kind == KindProcess && op.Group != "":
			k := gtp{op.Group, op.TP()}
			if processed[k] == nil {
				processed[k] = map[rec][]int{}
			}
			r := rec{op.Offset, op.Value}
			processed[k][r] = append(processed[k][r], op.ID)
		case op.Kind == KindCommit && op.Outcome == OutcomeOK:
			k := gtp{op.Group, op.TP()}
			if j, ok := committed[k]; !ok || op.Offset > h[j].Offset {
				committed[k] = i
			}
		}
	}
	// Values by offset, from every ok fetch, for the partitions some group
	// committed in.
	type seen struct {
		value string
		op    int
	}
	logs := map[kafka.TopicPartition]map[int64]seen{}
	for k := range committed {
		logs[k.tp] = map[int64]seen{}
	}
	starts := map[kafka.TopicPartition]int64{} // the highest log start a fetch reported
	for i := range h {
		op := &h[i]
		if op.Kind == KindFetch && op.LogStart > starts[op.TP()] {
			starts[op.TP()] = op.LogStart
		}
		if op.Kind != KindFetch || op.Outcome != OutcomeOK {
			continue
		}
		log, ok := logs[op.TP()]
		if !ok {
			continue
		}
		for _, r := range op.Records {
			if _, known := log[r.Offset]; !known {
				log[r.Offset] = seen{r.Value, op.ID}
			}
		}
	}
	var out []Anomaly
	keys := slices.SortedFunc(maps.Keys(processed), func(a, b gtp) int {
		if c := kafka.TopicPartition.Compare(a.tp, b.tp); c != 0 {
			return c
		}
		return cmp.Compare(a.group, b.group)
	})
	for _, k := range keys {
		recs := slices.SortedFunc(maps.Keys(processed[k]), func(a, b rec) int {
			if a.offset != b.offset {
				return cmp.Compare(a.offset, b.offset)
			}
			return cmp.Compare(a.value, b.value)
		})
		for _, r := range recs {
			if ids := processed[k][r]; len(ids) > 1 {
				out = append(out, Anomaly{Name: AnomalyReprocessed, Group: k.group, Topic: k.tp.Topic, Partition: k.tp.Partition,
					Offset: r.offset, Value: r.value, Ops: slices.Sorted(slices.Values(ids)),
					Detail: fmt.Sprintf("group %s processed %q at offset %d %d times", k.group, r.value, r.offset, len(ids))})
			}
		}
	}
	ckeys := slices.SortedFunc(maps.Keys(committed), func(a, b gtp) int {
		if c := kafka.TopicPartition.Compare(a.tp, b.tp); c != 0 {
			return c
		}
		return cmp.Compare(a.group, b.group)
	})
	records := map[string]bool{}
	for k := range processed {
		records[k.group] = true
	}
	for _, k := range ckeys {
		if !records[k.group] {
			continue
		}
		c := &h[committed[k]]
		log := logs[k.tp]
		for o := starts[k.tp]; o < c.Offset; o++ {
			s, known := log[o]
			if !known {
				continue
			}
			if _, done := processed[k][rec{o, s.value}]; done {
				continue
			}
			out = append(out, Anomaly{Name: AnomalyUnprocessed, Group: k.group, Topic: k.tp.Topic, Partition: k.tp.Partition,
				Offset: o, Value: s.value, Ops: []int{c.ID, s.op},
				Detail: fmt.Sprintf("group %s committed %d (op %d) but never processed %q at offset %d", k.group, c.Offset, c.ID, s.value, o)})
		}
	}
	return out
}
