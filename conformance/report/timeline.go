package report

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/run"
)

// timelineEvent is one partition's election or ISR change.
type timelineEvent struct {
	at     int64
	what   string // "election", "unclean election" or "isr"
	leader int
	epoch  int // leader epoch for elections, partition epoch for ISR changes (-1: not known)
	oldISR string
	newISR string
}

// timeline is a run's notes sorted into partitions and everything else.
type timeline struct {
	partitions map[string][]timelineEvent
	other      []run.Note
}

func buildTimeline(notes []run.Note) *timeline {
	tl := &timeline{partitions: map[string][]timelineEvent{}}
	for _, n := range notes {
		switch n.Kind {
		case run.NoteElection:
			what := "election"
			if n.Unclean {
				what = "unclean election"
			}
			tl.add(n.Partition.String(), timelineEvent{at: n.AtMs, what: what, leader: int(n.Leader), epoch: int(n.Epoch)})
		case run.NoteISR:
			tl.add(n.Partition.String(), timelineEvent{at: n.AtMs, what: "isr", oldISR: fmt.Sprint(n.OldISR), newISR: fmt.Sprint(n.ISR), epoch: int(n.Epoch)})
		default:
			tl.other = append(tl.other, n)
		}
	}
	return tl
}

func (tl *timeline) add(partition string, e timelineEvent) {
	tl.partitions[partition] = append(tl.partitions[partition], e)
}

// names are the partitions in topic, then numeric partition order.
func (tl *timeline) names() []string {
	names := make([]string, 0, len(tl.partitions))
	for n := range tl.partitions {
		names = append(names, n)
	}
	split := func(s string) (string, int) {
		i := strings.LastIndex(s, "-")
		if i < 0 {
			return s, -1
		}
		n, err := strconv.Atoi(s[i+1:])
		if err != nil {
			return s, -1
		}
		return s[:i], n
	}
	sort.Slice(names, func(i, j int) bool {
		ti, pi := split(names[i])
		tj, pj := split(names[j])
		if ti != tj {
			return ti < tj
		}
		return pi < pj
	})
	return names
}

// writeTimeline renders a run as a person reads it: the faults, failpoints
// and heals in time order, then for each partition who led it when and how
// its ISR changed, with the faults interleaved so that cause and effect sit
// next to each other.
func writeTimeline(w io.Writer, r *judge.RunResult) error {
	res := r.Run
	tl := buildTimeline(res.Notes)
	var b strings.Builder
	fmt.Fprintf(&b, "timeline of case %s, seed %d: %s\n", r.Case, r.Seed, r.Verdict)
	clock := "simulated milliseconds"
	if res.Live {
		clock = "real milliseconds since the workload started; leaders and ISRs as the harness saw them in metadata every 100 ms"
	}
	fmt.Fprintf(&b, "times are %s; the workload runs until %d ms, the run ends at %d ms\n",
		clock, res.Spec.DurationMs, res.Stats.EndMs)
	fmt.Fprintf(&b, "LEADER and ISR are as of that row; ? = not in the notes (the initial state, or the ISR right after a clean election)\n")

	fmt.Fprintf(&b, "\nfaults, failpoints, heals and harness events:\n")
	if len(tl.other) == 0 {
		fmt.Fprintf(&b, "  (none)\n")
	}
	for _, n := range tl.other {
		fmt.Fprintf(&b, "  %8d ms  %s\n", n.AtMs, n.Text)
	}

	names := tl.names()
	if len(names) == 0 {
		fmt.Fprintf(&b, "\nno elections or ISR changes were recorded\n")
	}
	for _, p := range names {
		events := tl.partitions[p]
		fmt.Fprintf(&b, "\npartition %s\n", p)
		fmt.Fprintf(&b, "  leadership:\n")
		writeLeadership(&b, events, res.Stats.EndMs)
		fmt.Fprintf(&b, "  in time order (* = a fault, failpoint, heal, invariant or harness event):\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  TIME MS\tLEADER\tISR\tWHAT\n")
		leader, isr := "?", "?"
		rows := mergeNotes(events, tl.other)
		for _, row := range rows {
			if row.note != nil {
				fmt.Fprintf(tw, "  %d\t\t\t* %s\n", row.note.AtMs, row.note.Text)
				continue
			}
			e := row.event
			var what string
			switch e.what {
			case "isr":
				isr = e.newISR
				what = fmt.Sprintf("ISR %s -> %s", e.oldISR, e.newISR)
				if e.epoch >= 0 {
					what += fmt.Sprintf(" (partition epoch %d)", e.epoch)
				}
			default:
				// A clean election may drop the old leader from the ISR: the
				// next ISR change says what it became. An unclean one resets
				// the ISR to the new leader.
				leader, isr = strconv.Itoa(e.leader), "?"
				if e.what == "unclean election" {
					isr = fmt.Sprintf("[%d]", e.leader)
				}
				what = fmt.Sprintf("%s: broker %d leads in epoch %d", e.what, e.leader, e.epoch)
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", e.at, leader, isr, what)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeLeadership lists who led a partition from when to when. The leader
// before the first election is the initial assignment, which the notes do
// not record.
func writeLeadership(b *strings.Builder, events []timelineEvent, endMs int64) {
	type span struct {
		from    int64
		leader  int
		epoch   int
		unclean bool
	}
	var spans []span
	for _, e := range events {
		if e.what == "isr" {
			continue
		}
		spans = append(spans, span{from: e.at, leader: e.leader, epoch: e.epoch, unclean: e.what == "unclean election"})
	}
	if len(spans) == 0 {
		fmt.Fprintf(b, "    the initial leader throughout (no election)\n")
		return
	}
	if spans[0].from > 0 {
		fmt.Fprintf(b, "    %8d .. %-8d ms  the initial leader\n", 0, spans[0].from)
	}
	for i, s := range spans {
		until := fmt.Sprintf("%d", endMs)
		if i+1 < len(spans) {
			until = fmt.Sprintf("%d", spans[i+1].from)
		}
		extra := ""
		if s.unclean {
			extra = ", UNCLEAN election"
		}
		fmt.Fprintf(b, "    %8d .. %-8s ms  broker %d (leader epoch %d%s)\n", s.from, until, s.leader, s.epoch, extra)
	}
}

type timelineRow struct {
	event *timelineEvent
	note  *run.Note
}

// mergeNotes interleaves a partition's events with the other notes by
// time; at equal times the other note (usually the cause) comes first.
func mergeNotes(events []timelineEvent, other []run.Note) []timelineRow {
	rows := make([]timelineRow, 0, len(events)+len(other))
	i, j := 0, 0
	for i < len(events) || j < len(other) {
		if j < len(other) && (i == len(events) || other[j].AtMs <= events[i].at) {
			rows = append(rows, timelineRow{note: &other[j]})
			j++
			continue
		}
		rows = append(rows, timelineRow{event: &events[i]})
		i++
	}
	return rows
}
