package protocol

import (
	"fmt"
	"sort"
	"strings"
)

// Named is a protocol variant the explorer knows by name, with the bounds
// its claim is checked within.
type Named struct {
	Name    string
	Summary string
	Variant Variant
	// Safe says no invariant fails within Bounds; otherwise the explorer
	// must find a counterexample within them.
	Safe   bool
	Bounds Bounds
	// Repro is the failpoint config under failpoints/repro that reproduces
	// this variant's counterexample on the implementation ("" for Safe).
	Repro string
	// Reference names the KIP or JIRA.
	Reference string
}

// safeVariant is the strong-consistency recipe of spec/SEMANTICS.md:
// truncation on fetch with fencing, unclean election off, min.insync.replicas 2, HW
// held while the ISR is below it, restarts leave the ISR (KIP-903).
func safeVariant() Variant {
	return Variant{Truncation: TruncateEpoch, MinISR: 2}
}

func with(b Bounds, f func(*Bounds)) Bounds {
	f(&b)
	return b
}

// Variants lists the named variants.
var Variants = []Named{
	{
		Name:      "safe",
		Summary:   "truncation on fetch (KIP-101+279+320, KAFKA-10554), clean elections, min ISR 2, KIP-903 restarts",
		Variant:   safeVariant(),
		Safe:      true,
		Bounds:    DefaultBounds(),
		Reference: "spec/SEMANTICS.md, strong consistency recipe",
	},
	{
		Name:      "epoch-query",
		Summary:   "safe, with followers asking OffsetsForLeaderEpoch before they fetch (Kafka before KAFKA-10554)",
		Variant:   Variant{Truncation: TruncateEpochQuery, MinISR: 2},
		Safe:      true,
		Bounds:    DefaultBounds(),
		Reference: "KIP-101, KIP-279",
	},
	{
		Name:      "hw",
		Summary:   "followers truncate to their own HW (Kafka before 0.11)",
		Variant:   Variant{Truncation: TruncateHW, MinISR: 2},
		Bounds:    with(DefaultBounds(), func(b *Bounds) { b.Crashes = 2 }),
		Repro:     "kip101-data-loss.yaml",
		Reference: "KIP-101, scenario 1",
	},
	{
		Name:      "epoch-kip101",
		Summary:   "KIP-101 without KIP-279's rule: truncate to the leader's end offset, no epoch compared",
		Variant:   Variant{Truncation: TruncateEpochKIP101, MinISR: 2},
		Bounds:    with(DefaultBounds(), func(b *Bounds) { b.Reelections = 1 }),
		Repro:     "kafka-6361.yaml",
		Reference: "KAFKA-6361, KIP-279",
	},
	{
		Name:      "epoch-no-bump",
		Summary:   "no truncation when the same leader returns in a newer epoch",
		Variant:   Variant{Truncation: TruncateEpochNoBump, MinISR: 2},
		Bounds:    with(DefaultBounds(), func(b *Bounds) { b.Crashes = 2 }),
		Repro:     "kafka-7164.yaml",
		Reference: "KAFKA-7164",
	},
	{
		Name:      "no-fencing",
		Summary:   "KIP-101+279 without KIP-320: a leader serves fetches of any epoch (on the OffsetsForLeaderEpoch path, which KIP-320 came before)",
		Variant:   Variant{Truncation: TruncateEpochQuery, MinISR: 2, NoFencing: true},
		Bounds:    with(DefaultBounds(), func(b *Bounds) { b.Reelections = 1 }),
		Reference: "KIP-320",
	},
	{
		Name:      "unclean",
		Summary:   "unclean.leader.election.enable=true",
		Variant:   Variant{Truncation: TruncateEpoch, MinISR: 2, Unclean: true},
		Bounds:    with(DefaultBounds(), func(b *Bounds) { b.Crashes = 2 }),
		Repro:     "unclean-election.yaml",
		Reference: "spec/SEMANTICS.md, unclean election (loss by design)",
	},
	{
		Name:      "hw-below-min-isr",
		Summary:   "HW advances while the ISR is below min.insync.replicas",
		Variant:   Variant{Truncation: TruncateEpoch, MinISR: 2, HWBelowMinISR: true},
		Bounds:    with(DefaultBounds(), func(b *Bounds) { b.Crashes = 1; b.PowerLosses = 1 }),
		Repro:     "last-replica-standing.yaml",
		Reference: "last replica standing (KIP-966)",
	},
}

// VariantNames lists the names, sorted.
func VariantNames() []string {
	var out []string
	for _, v := range Variants {
		out = append(out, v.Name)
	}
	sort.Strings(out)
	return out
}

// Lookup finds a named variant.
func Lookup(name string) (Named, error) {
	for _, v := range Variants {
		if v.Name == name {
			return v, nil
		}
	}
	return Named{}, fmt.Errorf("unknown variant %q: want one of %s", name, strings.Join(VariantNames(), ", "))
}
